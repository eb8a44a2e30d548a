package dtype

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// F16FromF32 rounds f to IEEE binary16 (nearest, ties to even) and returns
// its bits. A NaN stays a quiet NaN with its sign and the top of its
// payload (sign|0x7E00|payload>>13), as torch's .half() on the CPU gives.
// Normal results are rebiased and rounded in integer arithmetic; subnormal
// ones come from one float32 addition, whose own rounding is the binary16
// rounding.
func F16FromF32(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7FFFFFFF
	switch {
	case a > 0x7F800000:
		return sign | 0x7E00 | uint16(a&0x7FFFFF>>13)
	case a >= 0x477FF000: // 65520 and above, and infinity
		return sign | 0x7C00
	case a >= 0x38800000: // 2^-14: a normal binary16
		r := a - 0x38000000
		r += 0xFFF + (r>>13)&1
		return sign | uint16(r>>13)
	}
	return sign | uint16(math.Float32bits(math.Float32frombits(a)+0.5)-0x3F000000)
}

// F16ToF32 returns the float32 value of the binary16 bits h (exact).
func F16ToF32(h uint16) float32 { return float16.Frombits(h).Float32() }

// EncodeF16 writes src as little-endian binary16 into dst, which must hold at
// least 2*len(src) bytes.
func EncodeF16(dst []byte, src []float32) {
	if len(src) == 0 {
		return
	}
	_ = dst[2*len(src)-1]
	for i, f := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F16FromF32(f))
	}
}

// DecodeF16 reads len(dst) little-endian binary16 values from src.
func DecodeF16(dst []float32, src []byte) {
	if len(dst) == 0 {
		return
	}
	_ = src[2*len(dst)-1]
	for i := range dst {
		dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}
