package dtype

import (
	"encoding/binary"
	"math"
)

// BF16NaN is the bit pattern BF16FromF32 gives for every NaN, as torch's
// tensor cast on the CPU does.
const BF16NaN uint16 = 0xFFFF

// BF16FromF32 rounds f to bfloat16 (nearest, ties to even) and returns its bits.
func BF16FromF32(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7FFFFFFF > 0x7F800000 {
		return BF16NaN
	}
	u += 0x7FFF + (u>>16)&1
	return uint16(u >> 16)
}

// BF16ToF32 returns the float32 value of the bfloat16 bits b (exact).
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// RoundBF16 returns f rounded to the nearest bfloat16 value, as a float32.
func RoundBF16(f float32) float32 { return BF16ToF32(BF16FromF32(f)) }

// EncodeBF16 writes src as little-endian bfloat16 into dst, which must hold
// at least 2*len(src) bytes.
func EncodeBF16(dst []byte, src []float32) {
	if len(src) == 0 {
		return
	}
	_ = dst[2*len(src)-1]
	for i, f := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], BF16FromF32(f))
	}
}

// DecodeBF16 reads len(dst) little-endian bfloat16 values from src.
func DecodeBF16(dst []float32, src []byte) {
	if len(dst) == 0 {
		return
	}
	_ = src[2*len(dst)-1]
	for i := range dst {
		dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}
