package convert

import (
	"encoding/binary"
	"math"

	"github.com/drama-tts/drama/safetensors/dtype"
)

// f32ToF16 casts little-endian float32 src to binary16 dst, as
// dtype.F16FromF32 does each value. Four values at a time take one 16-byte
// load and one 8-byte store when all four are normal binary16 numbers (the
// usual case for weights); any other block goes value by value.
func f32ToF16(dst, src []byte) {
	n := len(src) / 4
	i := 0
	for ; i+4 <= n; i += 4 {
		s := src[4*i : 4*i+16]
		d := dst[2*i : 2*i+8]
		u0, u1 := binary.LittleEndian.Uint32(s[0:]), binary.LittleEndian.Uint32(s[4:])
		u2, u3 := binary.LittleEndian.Uint32(s[8:]), binary.LittleEndian.Uint32(s[12:])
		h0, ok0 := normalF16(u0)
		h1, ok1 := normalF16(u1)
		h2, ok2 := normalF16(u2)
		h3, ok3 := normalF16(u3)
		if ok0 && ok1 && ok2 && ok3 {
			binary.LittleEndian.PutUint64(d, uint64(h0)|uint64(h1)<<16|uint64(h2)<<32|uint64(h3)<<48)
			continue
		}
		for k := range 4 {
			binary.LittleEndian.PutUint16(d[2*k:], dtype.F16FromF32(math.Float32frombits(binary.LittleEndian.Uint32(s[4*k:]))))
		}
	}
	for ; i < n; i++ {
		binary.LittleEndian.PutUint16(dst[2*i:], dtype.F16FromF32(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))))
	}
}

// normalF16 rounds the float32 bits u to binary16 (nearest, ties to even)
// when the result is a normal binary16 number (2^-14 <= |x| < 65520); ok
// is false otherwise, and the caller takes dtype.F16FromF32's general path.
func normalF16(u uint32) (h uint16, ok bool) {
	a := u & 0x7FFFFFFF
	r := a - 0x38000000
	r += 0xFFF + (r>>13)&1
	return uint16(u>>16)&0x8000 | uint16(r>>13), a-0x38800000 < 0x477FF000-0x38800000
}

// f32ToBF16 casts little-endian float32 src to bfloat16 dst.
func f32ToBF16(dst, src []byte) {
	n := len(src) / 4
	_ = dst[2*n-1]
	for i := range n {
		binary.LittleEndian.PutUint16(dst[2*i:], dtype.BF16FromF32(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))))
	}
}
