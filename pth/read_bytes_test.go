package pth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"testing"
)

type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestReaderReadsOnlyDirectoryAndPickle opens a checkpoint with 32 MiB of
// tensor data and counts the bytes read: the directory, the local headers
// and the small records only.
func TestReaderReadsOnlyDirectoryAndPickle(t *testing.T) {
	const numel = 8 << 20
	pkl := oneTensor(tensorArgs{"FloatStorage", "0", numel, 0, []int64{numel}, []int64{1}})
	file := torchZip(t, entry{"a/data.pkl", pkl, false}, entry{"a/data/0", make([]byte, 4*numel), false}, entry{"a/version", []byte("3\n"), false})
	c := &countingReaderAt{r: bytes.NewReader(file)}
	r, err := NewReader(c, int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.n.Load(); got > 80<<10 {
		t.Errorf("read %d bytes of a %d-byte file, want at most 80 KiB", got, len(file))
	}
	if r.Tensors[0].Len() != 4*numel {
		t.Errorf("tensor of %d bytes", r.Tensors[0].Len())
	}
}

// BenchmarkOpenReader opens the checkpoint named by PTH_BENCH_FILE (a
// codec-shaped file from scripts/make-pth-bench.py), else a fixture: this
// is what `drama pth inspect` costs before printing.
func BenchmarkOpenReader(b *testing.B) {
	name := os.Getenv("PTH_BENCH_FILE")
	if name == "" {
		name = "testdata/wn.pth"
	}
	for b.Loop() {
		r, err := OpenReader(name)
		if err != nil {
			b.Fatal(err)
		}
		CheckCodec(StripPrefix(r.Tensors, "generator."))
		r.Close()
	}
}

// TestZip64End forces the ZIP64 end-of-directory path: torch writes the
// ZIP64 end record and locator; saturating the classic record's fields
// makes the reader take the directory from them.
func TestZip64End(t *testing.T) {
	b, err := os.ReadFile("testdata/dtypes.pth")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(b, []byte("PK\x05\x06"))
	for _, at := range []int{8, 10} {
		b[i+at], b[i+at+1] = 0xff, 0xff
	}
	copy(b[i+12:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tensors) != 23 {
		t.Errorf("%d tensors", len(r.Tensors))
	}
	// A locator pointing outside the file is refused.
	loc := bytes.LastIndex(b, []byte("PK\x06\x07"))
	copy(b[loc+8:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0})
	if _, err := NewReader(bytes.NewReader(b), int64(len(b))); !errors.Is(err, ErrFormat) {
		t.Errorf("bad locator: want ErrFormat, got %v", err)
	}
}

// TestZip64Extra reads a central entry whose sizes and offset come from a
// ZIP64 extra field.
func TestZip64Extra(t *testing.T) {
	rec := &Record{Size: 0xffffffff, CompressedSize: 0xffffffff, HeaderOffset: 0xffffffff}
	extra := []byte{1, 0, 24, 0}
	for _, v := range []uint64{5 << 32, 5 << 32, 7 << 32} {
		extra = binary.LittleEndian.AppendUint64(extra, v)
	}
	if err := applyZip64(rec, append([]byte{9, 9, 0, 0}, extra...)); err != nil {
		t.Fatal(err)
	}
	if rec.Size != 5<<32 || rec.CompressedSize != 5<<32 || rec.HeaderOffset != 7<<32 {
		t.Errorf("%+v", rec)
	}
	short := &Record{Size: 0xffffffff, CompressedSize: 0xffffffff}
	if err := applyZip64(short, []byte{1, 0, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0}); !errors.Is(err, ErrFormat) {
		t.Errorf("short extra: want ErrFormat, got %v", err)
	}
}
