package pth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"slices"
	"testing"
)

type manifestTensor struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	SHA256 string  `json:"sha256"`
}

type manifestFile struct {
	Format  string           `json:"format"`
	Tensors []manifestTensor `json:"tensors"`
}

func loadManifest(t *testing.T) map[string]manifestFile {
	t.Helper()
	b, err := os.ReadFile("testdata/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string]manifestFile{}
	for k, v := range raw {
		if k == "torch" {
			continue
		}
		var f manifestFile
		if err := json.Unmarshal(v, &f); err != nil {
			t.Fatal(err)
		}
		out[k] = f
	}
	return out
}

var torchDTypes = map[string]DType{
	"f64": F64, "f32": F32, "f16": F16, "bf16": BF16, "f8_e4m3fn": F8E4M3, "f8_e5m2": F8E5M2,
	"u16": U16, "i64": I64, "i32": I32, "i16": I16, "i8": I8, "u8": U8, "bool": Bool,
}

func tensorSHA(t *testing.T, x *Tensor) string {
	t.Helper()
	h := sha256.New()
	if _, err := io.Copy(h, x.Open()); err != nil {
		t.Fatalf("%s: %v", x.Name, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestFixturesMatchTorch reads every fixture made by torch and compares
// each tensor's name, dtype, shape and the sha256 of its contiguous bytes
// with what torch computed.
func TestFixturesMatchTorch(t *testing.T) {
	for file, want := range loadManifest(t) {
		t.Run(file, func(t *testing.T) {
			r, err := OpenReader("testdata/" + file)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if string(r.Format) != want.Format {
				t.Errorf("format: want %s, got %s", want.Format, r.Format)
			}
			got := StripPrefix(r.Tensors, "generator.")
			if len(got) != len(want.Tensors) {
				t.Fatalf("tensors: want %d, got %d", len(want.Tensors), len(got))
			}
			for i, w := range want.Tensors {
				g := got[i]
				if g.Name != w.Name || g.DType != torchDTypes[w.DType] || !slices.Equal(g.Shape, w.Shape) {
					t.Errorf("tensor %d: want %s %s %v, got %s %s %v", i, w.Name, w.DType, w.Shape, g.Name, g.DType, g.Shape)
				}
				if s := tensorSHA(t, g); s != w.SHA256 {
					t.Errorf("%s: sha256 want %s, got %s", w.Name, w.SHA256, s)
				}
			}
		})
	}
}

// TestLegacyGrowingWindow reads the legacy fixture with pickle windows from
// 1 byte up, so every pickle is rerun on a doubled window at least once,
// and compares the tensors with torch's.
func TestLegacyGrowingWindow(t *testing.T) {
	want := loadManifest(t)["legacy.pth"]
	b, err := os.ReadFile("testdata/legacy.pth")
	if err != nil {
		t.Fatal(err)
	}
	for _, window := range []int64{1, 7, 100} {
		rd := &Reader{Format: FormatLegacy, size: int64(len(b)), ByteOrder: "little", src: bytes.NewReader(b), lim: DefaultLimits}
		if err := rd.readLegacy(rd.src, rd.lim, window); err != nil {
			t.Fatalf("window %d: %v", window, err)
		}
		if len(rd.Tensors) != len(want.Tensors) || len(want.Tensors) == 0 {
			t.Fatalf("window %d: want %d tensors, got %d", window, len(want.Tensors), len(rd.Tensors))
		}
		for i, w := range want.Tensors {
			if g := rd.Tensors[i]; g.Name != w.Name || tensorSHA(t, g) != w.SHA256 {
				t.Errorf("window %d: tensor %d: want %s %s, got %s %s", window, i, w.Name, w.SHA256, g.Name, tensorSHA(t, g))
			}
		}
	}
}

func TestReaderMetadata(t *testing.T) {
	r, err := OpenReader("testdata/dtypes.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Prefix != "dtypes" || r.Version != 3 || r.ByteOrder != "little" || r.Format != FormatZip {
		t.Errorf("got prefix %q version %d byteorder %q format %s", r.Prefix, r.Version, r.ByteOrder, r.Format)
	}
	if rec := r.Record("data/0"); rec == nil || rec.Name != "dtypes/data/0" || rec.DataOffset%64 != 0 || rec.Method != Store || rec != r.Tensor("f64").Storage.Record {
		t.Errorf("record data/0: %+v", rec)
	}
	if r.Record("../dtypes/data/0") != nil || r.Record("dtypes/data/0") != nil {
		t.Error("record lookup accepts names outside the prefix")
	}
	base, same, cols := r.Tensor("base"), r.Tensor("same"), r.Tensor("view_cols")
	if base.Storage != same.Storage || base.Storage != cols.Storage {
		t.Error("views of one storage do not share it")
	}
	if !base.Contiguous() || cols.Contiguous() || r.Tensor("transposed").Contiguous() {
		t.Error("contiguity misreported")
	}
	if s := r.Tensor("scalar"); len(s.Shape) != 0 || s.Numel() != 1 || s.Len() != 4 {
		t.Errorf("0-d tensor: shape %v numel %d", s.Shape, s.Numel())
	}
	if e := r.Tensor("empty"); e.Numel() != 0 || e.Len() != 0 {
		t.Errorf("empty tensor: numel %d", e.Numel())
	}
	g, err := OpenReader("testdata/generator.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Container != "state_dict" || !slices.Equal(g.Skipped, nil) {
		t.Errorf("container %q skipped %v", g.Container, g.Skipped)
	}
}

func TestReadAtPartial(t *testing.T) {
	r, err := OpenReader("testdata/dtypes.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"base", "transposed", "step", "broadcast", "view_cols"} {
		x := r.Tensor(name)
		whole := make([]byte, x.Len())
		if _, err := x.ReadAt(whole, 0); err != nil {
			t.Fatal(err)
		}
		// Unaligned pieces must agree with the whole.
		for off := int64(0); off < x.Len(); off += 7 {
			p := make([]byte, 5)
			n, err := x.ReadAt(p, off)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if string(p[:n]) != string(whole[off:off+int64(n)]) {
				t.Fatalf("%s at %d: want % x, got % x", name, off, whole[off:off+int64(n)], p[:n])
			}
		}
		if _, err := x.ReadAt(make([]byte, 1), x.Len()); err != io.EOF {
			t.Errorf("%s: read at end: want EOF, got %v", name, err)
		}
	}
}

// TestGatherWindows reads a transposed view whose storage span is larger
// than one gather window.
func TestGatherWindows(t *testing.T) {
	const rows, cols = 1500, 1000 // 6 MB of float32, more than maxGatherSpan
	vals := make([]float32, rows*cols)
	for i := range vals {
		vals[i] = float32(i)
	}
	base := synth("base", []int64{rows, cols}, vals)
	tr := &Tensor{Name: "t", DType: F32, Shape: []int64{cols, rows}, Stride: []int64{1, cols}, Storage: base.Storage}
	got := readF32(t, tr)
	for i := 0; i < cols; i += 97 {
		for j := 0; j < rows; j += 89 {
			if got[i*rows+j] != vals[j*cols+i] {
				t.Fatalf("[%d,%d]: want %g, got %g", i, j, vals[j*cols+i], got[i*rows+j])
			}
		}
	}
}

// Record returns the zip record with the given name under the archive
// prefix ("data.pkl", "data/0", "version"), or nil.
func (rd *Reader) Record(name string) *Record { return rd.byName[name] }

// Tensor returns the tensor with the given name, or nil.
func (rd *Reader) Tensor(name string) *Tensor {
	for _, t := range rd.Tensors {
		if t.Name == name {
			return t
		}
	}
	return nil
}
