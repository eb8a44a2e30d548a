package convert

import (
	"math"
	"testing"

	"github.com/drama-tts/drama/safetensors/dtype"
)

// TestF16BitsMatchesCodec compares the fast cast with the codec package's on
// every 1009th float32 bit pattern and, for every 13-bit-aligned pattern, the
// rounding neighbourhood (ties, one below, one above).
func TestF16BitsMatchesCodec(t *testing.T) {
	check := func(u uint32) bool {
		want := dtype.F16FromF32(math.Float32frombits(u))
		if got := f16Bits(u); got != want {
			t.Errorf("bits %#08x: want %#04x, got %#04x", u, want, got)
			return false
		}
		return true
	}
	for u := uint64(0); u < 1<<32; u += 1009 {
		if !check(uint32(u)) {
			return
		}
	}
	for hi := uint32(0); hi < 1<<19; hi++ {
		for _, lo := range []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff} {
			if !check(hi<<13 | lo) {
				return
			}
		}
	}
}

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
