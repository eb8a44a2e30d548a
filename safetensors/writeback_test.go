package safetensors

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestWritebackDoesNotHoldWorkers: starting a write's writeback waits
// while the disk's queue is full, as it is of the input's reads when the
// page cache is cold. Here it waits until every tensor has been written:
// the workers hand their ranges over and go on, so all 32 tensors are
// written while the first writeback still waits, and the file is complete
// and right once it is let go. Workers that start the writeback themselves
// all wait in it after their first tensor, and the rest are never written.
func TestWritebackDoesNotHoldWorkers(t *testing.T) {
	var hs []TensorHeader
	for i := range 32 {
		hs = append(hs, TensorHeader{Name: fmt.Sprint("t", i), DType: U8, Shape: []int64{3 << 12}})
	}
	l, err := Plan(hs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var written atomic.Int32
	all := make(chan struct{})
	src := SourceFunc(func(_ context.Context, pt *PlannedTensor, w io.Writer) error {
		b := make([]byte, pt.Size)
		for i := range b {
			b[i] = byte(pt.Index + i)
		}
		_, err := w.Write(b)
		if written.Add(1) == int32(len(hs)) {
			close(all)
		}
		return err
	})
	var late atomic.Int32 // tensors written when the wait gave up, +1
	gaveUp := make(chan struct{})
	orig := startWriteback
	startWriteback = func(f *os.File, off, n int64) {
		select {
		case <-all:
		case <-gaveUp:
		case <-time.After(20 * time.Second):
			if late.CompareAndSwap(0, written.Load()+1) {
				close(gaveUp)
			}
		}
		orig(f, off, n)
	}
	t.Cleanup(func() { startWriteback = orig })
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := l.WriteFile(context.Background(), path, src, WriteOptions{Workers: 4}); err != nil {
		t.Fatal(err)
	}
	if n := late.Load(); n > 0 {
		t.Fatalf("%d of %d tensors were written in 20 s while a writeback waited: the workers waited on it", n-1, len(hs))
	}
	rc, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	for i := range hs {
		th, err := rc.Tensor(hs[i].Name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := th.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range b {
			if v != byte(i+j) {
				t.Fatalf("tensor %s byte %d: %d, want %d", th.Name, j, v, byte(i+j))
			}
		}
	}
}
