package convert

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/pth"
)

// benchFile is a codec-shaped checkpoint made by scripts/make-pth-bench.py;
// the benchmarks skip when PTH_BENCH_FILE does not name one.
func benchFile(b *testing.B) string {
	name := os.Getenv("PTH_BENCH_FILE")
	if name == "" {
		b.Skip("set PTH_BENCH_FILE to a checkpoint made by scripts/make-pth-bench.py")
	}
	return name
}

func benchConvert(b *testing.B, opts Options) {
	name := benchFile(b)
	r, err := pth.OpenReader(name)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	out := filepath.Join(b.TempDir(), "out.safetensors")
	b.SetBytes(fi.Size())
	for b.Loop() {
		p, err := New(&r.Reader, f, fi.Size(), fi.Name(), opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Write(context.Background(), out); err != nil {
			b.Fatal(err)
		}
	}
}

// The figures are in input bytes per second, the output synced each time.
func BenchmarkConvertKeep(b *testing.B) { benchConvert(b, Options{}) }
func BenchmarkConvertF16(b *testing.B)  { benchConvert(b, Options{DType: F16}) }
func BenchmarkConvertBF16(b *testing.B) { benchConvert(b, Options{DType: BF16}) }
func BenchmarkConvertF16Fold(b *testing.B) {
	benchConvert(b, Options{DType: F16, FoldWeightNorm: true})
}
