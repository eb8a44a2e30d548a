package convert

import (
	"encoding/binary"
	"math"

	"github.com/drama-tts/drama/safetensors/dtype"
)

// f16Bits rounds the float32 with bits u to binary16, nearest with ties to
// even, as dtype.F16FromF32 and torch's .half() do (a NaN keeps its sign
// and the top of its payload, quieted). Normal results are rebiased and rounded in integer
// arithmetic; subnormal ones come from one float32 addition, whose own
// rounding is the binary16 rounding.
func f16Bits(u uint32) uint16 {
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return sign | 0x7e00 | uint16(a&0x7fffff>>13)
	case a >= 0x477ff000: // 65520 and above, and infinity
		return sign | 0x7c00
	case a >= 0x38800000: // 2^-14: a normal binary16
		r := a - 0x38000000
		r += 0xfff + (r>>13)&1
		return sign | uint16(r>>13)
	}
	return sign | uint16(math.Float32bits(math.Float32frombits(a)+0.5)-0x3f000000)
}

// f32ToF16 casts little-endian float32 src to binary16 dst.
func f32ToF16(dst, src []byte) {
	n := len(src) / 4
	_ = dst[2*n-1]
	for i := range n {
		binary.LittleEndian.PutUint16(dst[2*i:], f16Bits(binary.LittleEndian.Uint32(src[4*i:])))
	}
}

// f32ToBF16 casts little-endian float32 src to bfloat16 dst.
func f32ToBF16(dst, src []byte) {
	n := len(src) / 4
	_ = dst[2*n-1]
	for i := range n {
		binary.LittleEndian.PutUint16(dst[2*i:], dtype.BF16FromF32(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))))
	}
}
