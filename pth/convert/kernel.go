package convert

import (
	"encoding/binary"
	"math"

	"github.com/drama-tts/drama/safetensors/dtype"
)

// f32ToF16 casts little-endian float32 src to binary16 dst.
func f32ToF16(dst, src []byte) {
	n := len(src) / 4
	_ = dst[2*n-1]
	for i := range n {
		binary.LittleEndian.PutUint16(dst[2*i:], dtype.F16FromF32(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))))
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
