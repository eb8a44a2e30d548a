package safetensors

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// testTensors returns headers and deterministic contents for a small file.
func testTensors() ([]TensorHeader, map[string][]byte) {
	hs := []TensorHeader{
		{"w.weight", F8E4M3, []int64{4, 32}},
		{"w.weight_scale_inv", F32, []int64{1, 1}},
		{"norm", BF16, []int64{7}},
		{"scalar", F32, []int64{}},
		{"empty", F16, []int64{0, 3}},
		{"ids", I64, []int64{3}},
		{"mask", Bool, []int64{5}},
	}
	data := map[string][]byte{}
	for i, h := range hs {
		n, _ := byteSize(h.DType, h.Shape)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		data[h.Name] = b
	}
	return hs, data
}

// bytesSource writes each tensor's bytes in chunks of at most 5 bytes, to
// exercise partial writes.
func bytesSource(data map[string][]byte) Source {
	return SourceFunc(func(ctx context.Context, t *PlannedTensor, w io.Writer) error {
		b := data[t.Name]
		for len(b) > 0 {
			n := min(5, len(b))
			if _, err := w.Write(b[:n]); err != nil {
				return err
			}
			b = b[n:]
		}
		return nil
	})
}

func writeTest(t *testing.T, dir string, workers int) string {
	t.Helper()
	hs, data := testTensors()
	l, err := Plan(hs, map[string]string{"format": "pt", "b": "x"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.safetensors")
	if err := l.WriteFile(context.Background(), path, bytesSource(data), WriteOptions{Workers: workers}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := writeTest(t, dir, 3)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(raw)
	if (8+n)%8 != 0 {
		t.Errorf("data starts at %d, want a multiple of 8", 8+n)
	}
	if !bytes.HasPrefix(raw[8:], []byte(`{"__metadata__":{"b":"x","format":"pt"},"w.weight":{"dtype":"F8_E4M3","shape":[4,32],"data_offsets":[0,128]}`)) {
		t.Errorf("header: got %s", raw[8:8+n])
	}
	rc, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	hs, data := testTensors()
	if len(rc.Tensors) != len(hs) {
		t.Fatalf("tensors: want %d, got %d", len(hs), len(rc.Tensors))
	}
	for i, h := range hs {
		got := rc.Tensors[i]
		if got.Name != h.Name || got.DType != h.DType || len(got.Shape) != len(h.Shape) {
			t.Errorf("tensor %d: want %+v, got %s %s %v", i, h, got.Name, got.DType, got.Shape)
		}
		b, err := got.Bytes()
		if err != nil || !bytes.Equal(b, data[h.Name]) {
			t.Errorf("tensor %q bytes differ (err %v)", h.Name, err)
		}
	}
	if rc.Metadata["format"] != "pt" {
		t.Errorf("metadata: got %v", rc.Metadata)
	}
	if _, err := rc.Tensor("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing tensor: want ErrNotFound, got %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the output", len(entries))
	}
}

func TestWriteSameBytesAnyWorkerCount(t *testing.T) {
	var sums [][32]byte
	for _, w := range []int{1, 2, 8} {
		b, err := os.ReadFile(writeTest(t, t.TempDir(), w))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sha256.Sum256(b))
	}
	if sums[0] != sums[1] || sums[0] != sums[2] {
		t.Errorf("output differs with the worker count: %x", sums)
	}
}

func TestWriteFailuresLeaveNothing(t *testing.T) {
	hs, data := testTensors()
	l, err := Plan(hs, nil)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	tests := []struct {
		name string
		src  Source
		want error
	}{
		{"short", SourceFunc(func(ctx context.Context, t *PlannedTensor, w io.Writer) error {
			_, err := w.Write(data[t.Name][:t.Size/2])
			return err
		}), ErrShortTensor},
		{"long", SourceFunc(func(ctx context.Context, t *PlannedTensor, w io.Writer) error {
			_, err := w.Write(append(data[t.Name], 0))
			return err
		}), ErrShortTensor},
		{"source error", SourceFunc(func(ctx context.Context, t *PlannedTensor, w io.Writer) error {
			if t.Name == "norm" {
				return boom
			}
			return bytesSource(data).WriteTensor(ctx, t, w)
		}), boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.safetensors")
			err := l.WriteFile(context.Background(), path, tt.src, WriteOptions{Workers: 2})
			if !errors.Is(err, tt.want) {
				t.Fatalf("want %v, got %v", tt.want, err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if err := l.WriteFile(ctx, filepath.Join(dir, "x"), bytesSource(data), WriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: want context.Canceled, got %v", err)
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name string
		hs   []TensorHeader
	}{
		{"duplicate", []TensorHeader{{"a", F32, []int64{1}}, {"a", F32, []int64{1}}}},
		{"bad dtype", []TensorHeader{{"a", "F4", []int64{2}}}},
		{"negative", []TensorHeader{{"a", F32, []int64{-1}}}},
		{"overflow", []TensorHeader{{"a", F64, []int64{1 << 40, 1 << 30}}}},
		{"reserved name", []TensorHeader{{"__metadata__", F32, []int64{1}}}},
	}
	for _, tt := range tests {
		if _, err := Plan(tt.hs, nil); err == nil {
			t.Errorf("%s: want an error", tt.name)
		}
	}
}

// file builds a safetensors file from a raw header and data length.
func file(hdr string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	return append(b, make([]byte, data)...)
}

func TestReaderBadInput(t *testing.T) {
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	tests := []struct {
		name, want string
		in         []byte
	}{
		{"short file", "shorter than", []byte{1, 2}},
		{"huge header", "exceeds", binary.LittleEndian.AppendUint64(nil, 200_000_000)},
		{"header past end", "past the end", file(ok, 8)[:20]},
		{"not an object", "does not start", file(`[1,2]`, 0)},
		{"bad json", "bad header entry", file(`{"a":}`, 0)},
		{"truncated json", "bad header entry: EOF", file(`{"a"`, 0)},
		{"truncated object", "not JSON", file(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`, 0)},
		{"unknown dtype", `unsupported dtype "F4"`, file(`{"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, 1)},
		{"size mismatch", "want 8, got 4", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4)},
		{"gap", "gap", file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, 4)},
		{"overlap", "overlap", file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, 3)},
		{"trailing data", "holds 9", file(ok, 9)},
		{"missing data", "holds 7", file(ok, 7)},
		{"duplicate", "twice", file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2)},
		{"negative dim", "negative", file(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, 0)},
		{"reversed offsets", "begin <= end", file(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[3,0]}}`, 0)},
		{"no shape", "missing shape", file(`{"a":{"dtype":"U8","data_offsets":[0,0]}}`, 0)},
		{"metadata not strings", "__metadata__", file(`{"__metadata__":{"a":1}}`, 0)},
		{"garbage after", "after the header", file(`{}  x`, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tt.in), int64(len(tt.in)))
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("want a format error containing %q, got %v", tt.want, err)
			}
		})
	}
	if _, err := NewReader(bytes.NewReader(file(ok+"  ", 8)), int64(len(file(ok+"  ", 8)))); err != nil {
		t.Errorf("space padding: %v", err)
	}
}

func FuzzNewReader(f *testing.F) {
	f.Add(file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(file(`{"__metadata__":{"k":"v"},"b":{"dtype":"BF16","shape":[1,2],"data_offsets":[0,4]}}`, 4))
	// Seeds: the PyTorch-made reference files of safetensors/quant.
	if seeds, _ := filepath.Glob("quant/testdata/*.safetensors"); len(seeds) > 0 {
		for _, s := range seeds {
			if b, err := os.ReadFile(s); err == nil && len(b) < 1<<20 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		for _, tn := range r.Tensors {
			if tn.Offset < r.DataOffset() || tn.Offset+tn.Size > int64(len(b)) {
				t.Fatalf("tensor %q out of the file", tn.Name)
			}
		}
	})
}

func TestTensorSlice(t *testing.T) {
	path := writeTest(t, t.TempDir(), 1)
	rc, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	w, _ := rc.Tensor("w.weight") // F8_E4M3 [4, 32]
	all, _ := w.Bytes()
	s, err := w.Slice("row2", 64, 32, []int64{1, 32})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Bytes(); !bytes.Equal(b, all[64:96]) {
		t.Error("slice bytes differ")
	}
	if _, err := w.Slice("x", 120, 16, []int64{16}); err == nil {
		t.Error("slice past the end: want an error")
	}
	if _, err := w.Slice("x", 0, 16, []int64{4}); err == nil {
		t.Error("slice with a wrong shape: want an error")
	}
}

// groupSource groups tensors in pairs and checks each pair is written in
// order by one worker: the second member starts only after the first ended.
type groupSource struct {
	data  map[string][]byte
	mu    sync.Mutex
	ended map[int]bool
	bad   []string
}

func (g *groupSource) Group(t *PlannedTensor) int { return t.Index / 2 }

func (g *groupSource) WriteTensor(ctx context.Context, t *PlannedTensor, w io.Writer) error {
	g.mu.Lock()
	if t.Index%2 == 1 && !g.ended[t.Index-1] {
		g.bad = append(g.bad, t.Name)
	}
	g.mu.Unlock()
	if err := bytesSource(g.data).WriteTensor(ctx, t, w); err != nil {
		return err
	}
	g.mu.Lock()
	g.ended[t.Index] = true
	g.mu.Unlock()
	return nil
}

func TestWriteGroups(t *testing.T) {
	hs, data := testTensors()
	l, err := Plan(hs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(l.batches(&groupSource{})); got != 4 {
		t.Errorf("7 tensors in pairs: want 4 batches, got %d", got)
	}
	g := &groupSource{data: data, ended: map[int]bool{}}
	path := filepath.Join(t.TempDir(), "g.safetensors")
	if err := l.WriteFile(context.Background(), path, g, WriteOptions{Workers: 4}); err != nil {
		t.Fatal(err)
	}
	if len(g.bad) > 0 {
		t.Errorf("second members started before the first ended: %v", g.bad)
	}
	want, _ := os.ReadFile(writeTest(t, t.TempDir(), 1))
	got, _ := os.ReadFile(path)
	if sha256.Sum256(got) == sha256.Sum256(want) {
		return
	}
	// Metadata differs between the two plans; compare the data only.
	if !bytes.Equal(got[len(l.Header):], want[len(want)-int(l.DataSize()):]) {
		t.Error("grouped writing changed the data")
	}
}
