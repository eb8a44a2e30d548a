package convert

import (
	"math"
	"testing"

	"github.com/drama-tts/drama/safetensors/dtype"
)

func BenchmarkF32ToF16(b *testing.B) {
	src := make([]byte, 1<<20)
	for i := 0; i < len(src); i += 4 {
		u := math.Float32bits(float32(i) * 1.37e-3)
		src[i], src[i+1], src[i+2], src[i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	dst := make([]byte, len(src)/2)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		f32ToF16(dst, src)
	}
}

func BenchmarkEncodeF16Codec(b *testing.B) {
	f := make([]float32, 1<<18)
	for i := range f {
		f[i] = float32(i) * 1.37e-3
	}
	dst := make([]byte, 2*len(f))
	b.SetBytes(int64(4 * len(f)))
	for b.Loop() {
		dtype.EncodeF16(dst, f)
	}
}
