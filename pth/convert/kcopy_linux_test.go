package convert

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkKernelCopy is the floor for convert --dtype keep: the benchmark
// file copied by copy_file_range and synced, to the same offsets (what cp
// does) and shifted by a page (what any change of container must do). The
// figures are input bytes per second.
func BenchmarkKernelCopy(b *testing.B) {
	for _, tc := range []struct {
		name  string
		shift int64
	}{{"same-offsets", 0}, {"shifted-4096", 4096}} {
		b.Run(tc.name, func(b *testing.B) {
			src, err := os.Open(benchFile(b))
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			fi, _ := src.Stat()
			b.SetBytes(fi.Size())
			for b.Loop() {
				benchKernelCopy(b, src, fi.Size(), tc.shift)
			}
		})
	}
}

func benchKernelCopy(b *testing.B, src *os.File, size, shift int64) {
	dst, err := os.Create(filepath.Join(b.TempDir(), "copy"))
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Close()
	in, out := int64(0), shift
	for in < size {
		if _, err := unix.CopyFileRange(int(src.Fd()), &in, int(dst.Fd()), &out, int(min(ChunkSize, size-in)), 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := dst.Sync(); err != nil {
		b.Fatal(err)
	}
}
