package pth

import (
	"bytes"
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
