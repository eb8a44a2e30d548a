package convert

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/drama-tts/drama/pth"
)

// residentPages counts the pages of the file at path in the page cache.
func residentPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Skipf("mincore: %v", e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestReplaceDropsOldCache replaces an output whose pages are cached,
// keeping a second name for the old file: once the new output is in
// place, the old file's content is intact and its pages are no longer
// cached, so the rename did not have to evict them (they were dropped
// while the new data was being synced).
func TestReplaceDropsOldCache(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.safetensors")
	old := bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(out)
	f.Sync() // clean pages, which can be dropped
	f.Close()
	os.ReadFile(out)
	if residentPages(t, out) == 0 {
		t.Skip("this file system keeps no pages cached here")
	}
	held := filepath.Join(dir, "held")
	if err := os.Link(out, held); err != nil {
		t.Skipf("hard link: %v", err)
	}
	r, err := pth.OpenReader(testdata + "proto4.pth")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src, _ := os.Open(testdata + "proto4.pth")
	defer src.Close()
	fi, _ := src.Stat()
	p, err := New(&r.Reader, src, fi.Size(), "proto4.pth", Options{DType: F16})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if n := residentPages(t, held); n != 0 {
		t.Errorf("%d pages of the replaced output were still cached after the rename", n)
	}
	if b, _ := os.ReadFile(held); !bytes.Equal(b, old) {
		t.Error("the replaced file's content changed")
	}
}
