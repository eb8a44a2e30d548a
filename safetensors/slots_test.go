package safetensors

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestWriteSlotsShared writes three files at once, eight workers each,
// sharing two slots: never more than two tensors are being filled at the
// same time over all three files, and every file is complete.
func TestWriteSlotsShared(t *testing.T) {
	var hs []TensorHeader
	for i := range 24 {
		hs = append(hs, TensorHeader{Name: fmt.Sprint("t", i), DType: U8, Shape: []int64{4096}})
	}
	l, err := Plan(hs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var now, peak atomic.Int32
	src := SourceFunc(func(_ context.Context, pt *PlannedTensor, w io.Writer) error {
		n := now.Add(1)
		defer now.Add(-1)
		for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
		}
		for range 20 {
			runtime.Gosched()
		}
		b := make([]byte, pt.Size)
		for i := range b {
			b[i] = byte(pt.Index)
		}
		_, err := w.Write(b)
		return err
	})
	slots := make(chan struct{}, 2)
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if err := l.WriteFile(context.Background(), filepath.Join(dir, fmt.Sprint(i)), src, WriteOptions{Workers: 8, Slots: slots}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 2 || p < 1 {
		t.Fatalf("%d tensors filled at once with 2 shared slots", p)
	}
	for i := range 3 {
		f, err := OpenReader(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		for j, tn := range f.Tensors {
			b, err := tn.Bytes()
			if err != nil || len(b) != 4096 || b[0] != byte(j) || b[4095] != byte(j) {
				t.Fatalf("file %d tensor %s: %v", i, tn.Name, err)
			}
		}
		f.Close()
	}
	if len(slots) != 0 {
		t.Fatalf("%d slots still taken after the writes", len(slots))
	}
}
