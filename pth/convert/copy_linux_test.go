package convert

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drama-tts/drama/pth"
	"github.com/drama-tts/drama/pth/pthtest"
	"github.com/drama-tts/drama/safetensors"
)

// TestKeepCopiesWithOneCopier converts a checkpoint of sixteen contiguous
// views and one transposed view with four workers: the contiguous ones
// must be copied by one copier at a time (several copy_file_range calls
// in flight into one file only burn cores), every output byte must have
// been sent on to the disk before the final sync (StartWriteback), and
// the output must equal the views' bytes.
func TestKeepCopiesWithOneCopier(t *testing.T) {
	const n, elems = 16, 1 << 16
	values := make([]float32, n*elems)
	for i := range values {
		values[i] = float32(i) * 0.5
	}
	var views []pthtest.View
	for i := range n {
		views = append(views, pthtest.View{Name: "w" + strconv.Itoa(i), Offset: int64(i * elems), Shape: []int64{elems}, Stride: []int64{1}})
	}
	views = append(views, pthtest.View{Name: "transposed", Shape: []int64{256, 256}, Stride: []int64{1, 256}})
	src := filepath.Join(t.TempDir(), "in.pth")
	pthtest.WriteArchive(t, src, values, views...)

	var inFlight, peak, calls atomic.Int32
	orig := copyFileRange
	copyFileRange = func(rfd int, roff *int64, wfd int, woff *int64, len int, flags int) (int, error) {
		calls.Add(1)
		k := inFlight.Add(1)
		defer inFlight.Add(-1)
		for old := peak.Load(); k > old && !peak.CompareAndSwap(old, k); old = peak.Load() {
		}
		time.Sleep(2 * time.Millisecond) // not a wait: a slow copy, so that a second copier, if any, starts while it runs
		return orig(rfd, roff, wfd, woff, len, flags)
	}
	var mu sync.Mutex
	var sent [][2]int64
	origWB := startWriteback
	startWriteback = func(f *os.File, off, n int64) {
		mu.Lock()
		sent = append(sent, [2]int64{off, off + n})
		mu.Unlock()
		origWB(f, off, n)
	}
	origClone := cloneRange
	cloneRange = func(int, *unix.FileCloneRange) error { return unix.EOPNOTSUPP } // copies, whatever the file system
	t.Cleanup(func() { copyFileRange, startWriteback, cloneRange = orig, origWB, origClone })

	r, err := pth.OpenReader(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	p, err := New(&r.Reader, f, fi.Size(), "in.pth", Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.safetensors")
	if err := p.Write(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if calls.Load() == 0 {
		t.Fatal("copy_file_range was never called for the contiguous views")
	}
	if got := peak.Load(); got != 1 {
		t.Errorf("%d copy_file_range calls were in flight at once, want 1", got)
	}
	// Every tensor's bytes were sent on to the disk.
	sort.Slice(sent, func(i, j int) bool { return sent[i][0] < sent[j][0] })
	covered := func(a, b int64) bool {
		for _, s := range sent {
			if s[0] <= a && s[1] > a {
				a = s[1]
			}
		}
		return a >= b
	}
	for _, pt := range p.Layout.Tensors {
		if !covered(pt.Offset, pt.Offset+pt.Size) {
			t.Errorf("tensor %s: bytes [%d, %d) were never sent on to the disk before the sync", pt.Name, pt.Offset, pt.Offset+pt.Size)
		}
	}
	st, err := safetensors.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, v := range r.Tensors {
		want := make([]byte, v.Len())
		if _, err := v.ReadAt(want, 0); err != nil {
			t.Fatal(err)
		}
		x, err := st.Tensor(v.Name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := x.Bytes()
		if !bytes.Equal(got, want) {
			t.Errorf("tensor %s: output bytes differ from the view's", v.Name)
		}
	}
}

func TestCloneSpan(t *testing.T) {
	for _, c := range []struct{ at, off, n, blk, head, body int64 }{
		{0, 0, 8192, 4096, 0, 8192},
		{10, 4106, 8192 + 50, 4096, 4086, 4096},      // same offset modulo the block: head, one block, tail
		{10, 4106, 4096 + 4085, 4096, 0, 0},          // one byte short of a whole block after the head
		{10, 4107, 1 << 20, 4096, 0, 0},              // offsets differ modulo the block
		{4096, 0, 4096*3 + 1, 4096, 0, 4096 * 3},     // aligned, a tail byte
		{100, 100, 1 << 20, 0, 0, 0},                 // unknown block size
		{8191, 12287, 1 + 4096*2, 4096, 1, 4096 * 2}, // one byte of head
	} {
		head, body := cloneSpan(c.at, c.off, c.n, c.blk)
		if head != c.head || body != c.body {
			t.Errorf("cloneSpan(%d, %d, %d, %d) = %d, %d; want %d, %d", c.at, c.off, c.n, c.blk, head, body, c.head, c.body)
		}
	}
}

// copierFiles makes a source of size random bytes and an empty output.
func copierFiles(t *testing.T, size int) (src, dst *os.File, data []byte) {
	t.Helper()
	dir := t.TempDir()
	data = make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "src"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(filepath.Join(dir, "src"))
	if err != nil {
		t.Fatal(err)
	}
	dst, err = os.Create(filepath.Join(dir, "dst"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close(); dst.Close() })
	return src, dst, data
}

// TestCopierReflinksWholeBlocks plays a file system with reflinks (the
// test's clone copies the bytes itself and records the range): the whole
// blocks go to the clone, the head and the tail are copied, Reflinked
// counts the blocks, and the output is the source's bytes. A file system
// that refuses the clone gets a plain copy and no more clone attempts.
func TestCopierReflinksWholeBlocks(t *testing.T) {
	blk := int64(4096)
	src, dst, data := copierFiles(t, 5*4096+300)
	var cloned [][3]int64
	refuse := false
	orig := cloneRange
	cloneRange = func(fd int, r *unix.FileCloneRange) error {
		if refuse {
			return unix.EOPNOTSUPP
		}
		cloned = append(cloned, [3]int64{int64(r.Dest_offset), int64(r.Src_offset), int64(r.Src_length)})
		_, err := dst.WriteAt(data[r.Src_offset:r.Src_offset+r.Src_length], int64(r.Dest_offset))
		return err
	}
	t.Cleanup(func() { cloneRange = orig })
	if bs := blockSize(dst); bs != blk {
		t.Skipf("block size %d", bs)
	}
	var progress int64
	c := &copier{flush: newFlusher(dst), progress: func(n int64) { progress += n }}
	defer c.flush.close()
	// Source bytes [4096+10, 4096+10+3*4096+200) to output offset 10.
	at, off, n := int64(10), int64(4096+10), int64(3*4096+200)
	if err := c.copy(context.Background(), dst, at, src, off, n); err != nil {
		t.Fatal(err)
	}
	if len(cloned) != 1 || cloned[0] != [3]int64{4096, 8192, 2 * 4096} || c.cloned != 2*4096 {
		t.Errorf("cloned %v (%d bytes), want [[4096 8192 8192]] (8192 bytes)", cloned, c.cloned)
	}
	got := make([]byte, n)
	if _, err := dst.ReadAt(got, at); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data[off:off+n]) || progress != n {
		t.Errorf("output differs from the source (progress %d of %d)", progress, n)
	}

	refuse = true
	src2, dst2, data2 := copierFiles(t, 3*4096)
	c2 := &copier{flush: newFlusher(dst2)}
	defer c2.flush.close()
	for range 2 {
		if err := c2.copy(context.Background(), dst2, 0, src2, 0, 3*4096); err != nil {
			t.Fatal(err)
		}
	}
	got2 := make([]byte, 3*4096)
	if _, err := dst2.ReadAt(got2, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got2, data2) || c2.cloned != 0 || !c2.noClone {
		t.Errorf("refused clone: output equal %v, cloned %d, noClone %v", bytes.Equal(got2, data2), c2.cloned, c2.noClone)
	}
}

// TestCopierWithoutKernelCopy plays a kernel without copy_file_range for
// these files (EXDEV): the copier falls back to pread and pwrite, in
// chunks of at most rwChunk, and the output is the source's bytes.
func TestCopierWithoutKernelCopy(t *testing.T) {
	src, dst, data := copierFiles(t, rwChunk+12345)
	orig := copyFileRange
	var calls int
	copyFileRange = func(int, *int64, int, *int64, int, int) (int, error) { calls++; return 0, unix.EXDEV }
	t.Cleanup(func() { copyFileRange = orig })
	c := &copier{flush: newFlusher(dst), noClone: true}
	defer c.flush.close()
	if err := c.copy(context.Background(), dst, 7, src, 3, int64(len(data)-3)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data)-3)
	if _, err := dst.ReadAt(got, 7); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data[3:]) || calls != 1 || !c.noKernel {
		t.Errorf("output equal %v, copy_file_range calls %d (want 1), noKernel %v", bytes.Equal(got, data[3:]), calls, c.noKernel)
	}
}
