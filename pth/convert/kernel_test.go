package convert

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
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

// f16Want is the value-by-value cast f32ToF16 must equal.
func f16Want(u uint32) uint16 { return dtype.F16FromF32(math.Float32frombits(u)) }

func checkF32ToF16(t *testing.T, us []uint32) {
	t.Helper()
	src := make([]byte, 4*len(us))
	for i, u := range us {
		binary.LittleEndian.PutUint32(src[4*i:], u)
	}
	dst := make([]byte, 2*len(us))
	f32ToF16(dst, src)
	for i, u := range us {
		if got, want := binary.LittleEndian.Uint16(dst[2*i:]), f16Want(u); got != want {
			t.Fatalf("element %d of %d, float32 bits %#08x: got %#04x, want %#04x", i, len(us), u, got, want)
		}
	}
}

// TestF32ToF16MatchesScalar compares the four-at-a-time cast with
// dtype.F16FromF32 on the edges of its fast path (the smallest normal
// binary16, the overflow threshold, ties to even, NaN, infinity,
// subnormals, both signs), with the odd values placed at every position of
// a block, and on 4 M random bit patterns; DRAMA_EXHAUSTIVE=f16cast checks
// all 2^32.
func TestF32ToF16MatchesScalar(t *testing.T) {
	edges := []uint32{0, 1, 0x00400000, 0x337FFFFF, 0x33800000, 0x33800001, 0x387FFFFF, 0x38800000, 0x38800001,
		0x38801000, 0x38802000, 0x38801FFF, 0x3F800FFF, 0x3F801000, 0x3F802000, 0x3F803000, 0x477FEFFF,
		0x477FF000, 0x477FF001, 0x477FE000, 0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF}
	var us []uint32
	for _, e := range edges {
		for _, u := range []uint32{e, e | 0x80000000} {
			for pos := range 5 { // a normal neighbour block, then u at each place of a block
				blk := []uint32{0x3F800000, 0x3E000000, 0xBF000000, 0x40000000}
				if pos < 4 {
					blk[pos] = u
				}
				us = append(us, blk...)
			}
		}
	}
	us = append(us, 0x3F800000, 0x7F800000, 0x3F800000) // a tail shorter than a block
	checkF32ToF16(t, us)
	rng := rand.New(rand.NewPCG(1, 2))
	rnd := make([]uint32, 4<<20)
	for i := range rnd {
		rnd[i] = rng.Uint32()
		if i%3 == 0 { // many blocks of normal values too
			rnd[i] = 0x38800000 + rng.Uint32N(0x477FF000-0x38800000) | rnd[i]&0x80000000
		}
	}
	checkF32ToF16(t, rnd)
	if os.Getenv("DRAMA_EXHAUSTIVE") == "f16cast" {
		all := make([]uint32, 1<<24)
		for hi := range uint32(256) {
			for i := range all {
				all[i] = hi<<24 | uint32(i)
			}
			checkF32ToF16(t, all)
		}
	}
}

func BenchmarkF32ToBF16(b *testing.B) {
	src := make([]byte, 1<<20)
	for i := 0; i < len(src); i += 4 {
		u := math.Float32bits(float32(i) * 1.37e-3)
		src[i], src[i+1], src[i+2], src[i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	dst := make([]byte, len(src)/2)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		f32ToBF16(dst, src)
	}
}
