package dtype

// e2m1Values are the E2M1 values indexed by code; code 8 is negative zero.
var e2m1Values = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, negZero, -0.5, -1, -1.5, -2, -3, -4, -6}

// E2M1ToF32 returns the value of the 4-bit E2M1 code c (only its low 4 bits
// are read). Code 0x8 is negative zero.
func E2M1ToF32(c uint8) float32 { return e2m1Values[c&15] }

var negZero = func() float32 { var z float32; return -z }()

// E2M1FromF32 rounds y to E2M1: nearest with ties to the even code (0.25 to 0,
// 0.75 to 1, 1.25 to 1, 1.75 to 2, 2.5 to 2, 3.5 to 4, 5 to 4), magnitudes
// above 5 to 6. The sign bit is set when y < 0, so -0.0 gives 0x0 and -0.1
// gives 0x8. NaN gives 0x7, as a sorted search of the rounding bounds places
// it (this is the code PyTorch references give to the 0/0 of a block whose
// scale underflows to zero).
func E2M1FromF32(y float32) uint8 {
	a := y
	if a < 0 {
		a = -a
	}
	c := 7 - b2u(a <= 0.25) - b2u(a < 0.75) - b2u(a <= 1.25) - b2u(a < 1.75) -
		b2u(a <= 2.5) - b2u(a < 3.5) - b2u(a <= 5)
	return c | b2u(y < 0)<<3
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// PackE2M1 packs pairs of E2M1 codes into bytes, the even-indexed element in
// the low nibble: dst[i] = codes[2i] | codes[2i+1]<<4. len(codes) must be
// even and dst must hold len(codes)/2 bytes.
func PackE2M1(dst []byte, codes []uint8) {
	for i := range len(codes) / 2 {
		dst[i] = codes[2*i]&15 | codes[2*i+1]<<4
	}
}
