package quant

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// The kernels on one expert projection of the Drama 3 backbone's shape
// (512 x 2048 block FP8), reported in ns per element.

func benchFP8(b *testing.B) (*BlockFP8, *NVFP4, float32) {
	src := randomFP8(rand.New(rand.NewPCG(5, 6)), 512, 2048)
	q, _ := NewNVFP4(src.Rows, src.Cols)
	return src, q, GlobalScale(src.Amax(true))
}

func perElement(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
	b.SetBytes(int64(n))
}

// BenchmarkFP8ToNVFP4Table is the table kernel: FP8 bytes to NVFP4.
func BenchmarkFP8ToNVFP4Table(b *testing.B) {
	src, q, g := benchFP8(b)
	cpu := startCPU()
	for b.Loop() {
		QuantizeBlockFP8(q, src, g, true)
	}
	cpu.report(b, src.Rows*src.Cols)
	perElement(b, src.Rows*src.Cols)
}

// BenchmarkFP8ToNVFP4Direct is the peer path: dequantize to BF16-rounded
// floats, then quantize each element.
func BenchmarkFP8ToNVFP4Direct(b *testing.B) {
	src, q, g := benchFP8(b)
	x := make([]float32, src.Rows*src.Cols)
	cpu := startCPU()
	for b.Loop() {
		src.Dequantize(x, true)
		QuantizeNVFP4(q, x, g)
	}
	cpu.report(b, src.Rows*src.Cols)
	perElement(b, src.Rows*src.Cols)
}

// BenchmarkNVFP4FromFloat quantizes float32 values (a BF16 source).
func BenchmarkNVFP4FromFloat(b *testing.B) {
	src, q, g := benchFP8(b)
	x := make([]float32, src.Rows*src.Cols)
	src.Dequantize(x, true)
	cpu := startCPU()
	for b.Loop() {
		QuantizeNVFP4(q, x, g)
	}
	cpu.report(b, len(x))
	perElement(b, len(x))
}

// BenchmarkQuantizeCheckpoint converts a 110 MB synthetic FP8 checkpoint
// of the backbone's expert shapes.
func BenchmarkQuantizeCheckpoint(b *testing.B) {
	in := b.TempDir()
	s := SyntheticCheckpoint{Layers: 2, Experts: 16, Hidden: 2048, Inter: 512}
	if err := s.Write(in); err != nil {
		b.Fatal(err)
	}
	var size int64
	for b.Loop() {
		out := filepath.Join(b.TempDir(), "o")
		res, err := Quantize(context.Background(), in, out, Options{Target: ToNVFP4})
		if err != nil {
			b.Fatal(err)
		}
		size = res.BytesIn
	}
	b.SetBytes(size)
}
