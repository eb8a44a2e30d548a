package convert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/drama-tts/drama/pth"
	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/dtype"
)

const testdata = "../testdata/"

type manifest map[string]json.RawMessage

type mTensor struct {
	Name   string  `json:"name"`
	Shape  []int64 `json:"shape"`
	SHA256 string  `json:"sha256"`
}

func wantTensors(t *testing.T, file string) []mTensor {
	t.Helper()
	b, err := os.ReadFile(testdata + "manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var f struct{ Tensors []mTensor }
	if err := json.Unmarshal(m[file], &f); err != nil {
		t.Fatal(err)
	}
	return f.Tensors
}

// convertFile converts a fixture and opens the result.
func convertFile(t *testing.T, file string, opts Options) (*safetensors.ReadCloser, *Plan) {
	t.Helper()
	r, err := pth.OpenReader(testdata + file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.Open(testdata + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	p, err := New(&r.Reader, f, fi.Size(), file, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.safetensors")
	if err := p.Write(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	st, err := safetensors.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, p
}

func digest(t *testing.T, x *safetensors.Tensor) string {
	b, err := x.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestKeepMatchesTorch converts with --dtype keep and compares each output
// tensor with the sha256 torch computed for its contiguous bytes: views,
// transposes, broadcasts, 0-d and empty tensors included.
func TestKeepMatchesTorch(t *testing.T) {
	for _, file := range []string{"proto4.pth", "legacy.pth", "generator.pth"} {
		opts := Options{StripPrefix: "generator."}
		if file == "dtypes.pth" {
			opts.Drop = regexp.MustCompile(`^u16$`)
		}
		st, _ := convertFile(t, file, opts)
		want := wantTensors(t, file)
		if len(st.Tensors) != len(want) {
			t.Fatalf("%s: want %d tensors, got %d", file, len(want), len(st.Tensors))
		}
		for _, w := range want {
			x, err := st.Tensor(w.Name)
			if err != nil {
				t.Fatal(err)
			}
			if d := digest(t, x); d != w.SHA256 {
				t.Errorf("%s %s: sha256 want %s, got %s", file, w.Name, w.SHA256, d)
			}
		}
	}
}

func TestDTypesAndMetadata(t *testing.T) {
	// Eight views of one storage write 2.07 times the storages' bytes.
	st, p := convertFile(t, "dtypes.pth", Options{Drop: regexp.MustCompile(`^u16$`), AllowExpand: true})
	if len(p.Dropped) != 1 || p.Dropped[0] != "u16" {
		t.Errorf("dropped %v", p.Dropped)
	}
	for _, w := range wantTensors(t, "dtypes.pth") {
		if w.Name == "u16" {
			continue
		}
		x, err := st.Tensor(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		if d := digest(t, x); d != w.SHA256 {
			t.Errorf("%s: sha256 want %s, got %s", w.Name, w.SHA256, d)
		}
	}
	src, _ := os.ReadFile(testdata + "dtypes.pth")
	sum := sha256.Sum256(src)
	if got := st.Metadata["source_sha256"]; got != hex.EncodeToString(sum[:]) {
		t.Errorf("source_sha256: want %x, got %s", sum, got)
	}
	if st.Metadata["format"] != "pt" || st.Metadata["convert.dtype"] != "keep" || st.Metadata["convert.drop"] != "^u16$" {
		t.Errorf("metadata %v", st.Metadata)
	}
}

func TestUnsupportedDType(t *testing.T) {
	r, err := pth.OpenReader(testdata + "dtypes.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := New(&r.Reader, nil, 0, "x", Options{}); !errors.Is(err, ErrDType) {
		t.Errorf("u16: want ErrDType, got %v", err)
	}
	if _, err := New(&r.Reader, nil, 0, "x", Options{DType: "f8"}); !errors.Is(err, ErrOptions) {
		t.Errorf("dtype f8: want ErrOptions, got %v", err)
	}
}

// TestCastsMatchTorch casts a stratified set of float32 bit patterns (every
// exponent, subnormals, ties, infinities, NaN) and compares the bytes with
// torch's .half() and .bfloat16() of the same values.
func TestCastsMatchTorch(t *testing.T) {
	for _, tc := range []struct {
		target Target
		want   string
	}{{F16, "h"}, {BF16, "b"}} {
		st, _ := convertFile(t, "casts.pth", Options{DType: tc.target})
		x, _ := st.Tensor("x")
		w, _ := st.Tensor(tc.want)
		a, _ := x.Bytes()
		b, _ := w.Bytes()
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("%s: lengths %d, %d", tc.target, len(a), len(b))
		}
		if !bytes.Equal(a, b) {
			for i := 0; i < len(a); i += 2 {
				if a[i] != b[i] || a[i+1] != b[i+1] {
					t.Errorf("%s: element %d: want % x, got % x", tc.target, i/2, b[i:i+2], a[i:i+2])
					break
				}
			}
		}
	}
}

func TestFoldAndF32(t *testing.T) {
	st, p := convertFile(t, "wn.pth", Options{FoldWeightNorm: true, DType: F32})
	if p.Folded != 4 || st.Metadata["convert.folded"] != "4" {
		t.Errorf("folded %d, metadata %v", p.Folded, st.Metadata)
	}
	for _, name := range []string{"old.weight", "lin.weight", "new.weight", "up.weight", "alpha"} {
		if x, err := st.Tensor(name); err != nil || x.DType != safetensors.F32 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := st.Tensor("up.parametrizations.weight.original0"); err == nil {
		t.Error("g kept after folding")
	}
}

func TestWriteLeavesNothingOnError(t *testing.T) {
	r, err := pth.OpenReader(testdata + "proto4.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := t.TempDir()
	// A source that is shorter than its tensors claim: reading fails.
	p, err := New(&r.Reader, bytes.NewReader(nil), 10, "x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(context.Background(), filepath.Join(dir, "o.safetensors")); err == nil {
		t.Fatal("want an error hashing a short source")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %v behind", ents)
	}
}

func TestGivenDigest(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	st, _ := convertFile(t, "proto4.pth", Options{SourceSHA256: sum})
	if st.Metadata["source_sha256"] != sum || st.Metadata["source_sha256_origin"] != "given" {
		t.Errorf("metadata %v", st.Metadata)
	}
	r, err := pth.OpenReader(testdata + "proto4.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := New(&r.Reader, nil, 0, "x", Options{SourceSHA256: "ABC"}); !errors.Is(err, ErrOptions) {
		t.Errorf("bad digest: want ErrOptions, got %v", err)
	}
}

// decodeRef widens src elements to float32 independently of cast.
func decodeRef(d pth.DType, src []byte) []float32 {
	var out []float32
	for i := 0; i < len(src); i += d.Size() {
		switch d {
		case pth.F64:
			out = append(out, float32(math.Float64frombits(binary.LittleEndian.Uint64(src[i:]))))
		case pth.F32:
			out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(src[i:])))
		case pth.F16:
			out = append(out, dtype.F16ToF32(binary.LittleEndian.Uint16(src[i:])))
		case pth.BF16:
			out = append(out, dtype.BF16ToF32(binary.LittleEndian.Uint16(src[i:])))
		}
	}
	return out
}

// TestWidenAndNarrow converts F64, F32, F16 and BF16 tensors to F32, F16
// and BF16 and compares with the codec package's encoders applied to the
// float32 values.
func TestWidenAndNarrow(t *testing.T) {
	r, err := pth.OpenReader(testdata + "dtypes.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, target := range []Target{F32, F16, BF16} {
		st, _ := convertFile(t, "dtypes.pth", Options{DType: target, Drop: regexp.MustCompile(`^u16$`)})
		for _, name := range []string{"f64", "f32", "f16", "bf16"} {
			var src *pth.Tensor
			for _, x := range r.Tensors {
				if x.Name == name {
					src = x
				}
			}
			raw := make([]byte, src.Len())
			if _, err := src.ReadAt(raw, 0); err != nil {
				t.Fatal(err)
			}
			f := decodeRef(src.DType, raw)
			var want []byte
			switch target {
			case F32:
				for _, x := range f {
					want = binary.LittleEndian.AppendUint32(want, math.Float32bits(x))
				}
			case F16:
				want = make([]byte, 2*len(f))
				dtype.EncodeF16(want, f)
			case BF16:
				want = make([]byte, 2*len(f))
				dtype.EncodeBF16(want, f)
			}
			x, _ := st.Tensor(name)
			got, _ := x.Bytes()
			if string(x.DType) != strings.ToUpper(string(target)) || !bytes.Equal(got, want) {
				t.Errorf("%s to %s: dtype %s, bytes want % x, got % x", name, target, x.DType, want, got)
			}
		}
	}
}
