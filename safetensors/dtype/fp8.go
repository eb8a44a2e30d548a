package dtype

import "math"

// E4M3NaN is the positive NaN code of F8_E4M3 (0xFF is the negative one).
const E4M3NaN uint8 = 0x7F

// E4M3Max is the largest finite F8_E4M3 value (code 0x7E).
const E4M3Max = 448

var e4m3Table = func() (t [256]float32) {
	for b := range 256 {
		t[b] = e4m3Value(uint8(b))
	}
	return t
}()

func e4m3Value(b uint8) float32 {
	e, m := int(b>>3)&15, float64(b&7)
	var v float64
	switch {
	case b&0x7F == 0x7F:
		v = math.NaN()
	case e == 0:
		v = math.Ldexp(m, -9)
	default:
		v = math.Ldexp(8+m, e-10)
	}
	if b&0x80 != 0 {
		v = -v
	}
	return float32(v)
}

// E4M3ToF32 returns the value of the F8_E4M3 code b (exact; NaN for 0x7F and 0xFF).
func E4M3ToF32(b uint8) float32 { return e4m3Table[b] }

// E4M3FromF32 rounds f to F8_E4M3 (nearest, ties to even, subnormals kept)
// as torch's .to(torch.float8_e4m3fn) does: magnitudes of 480 and more round
// into the NaN code, so anything above 464 (and NaN, +-Inf) gives sign|0x7F.
func E4M3FromF32(f float32) uint8 {
	u := math.Float32bits(f)
	sign := uint8(u>>24) & 0x80
	u &= 0x7FFFFFFF
	if u >= 0x43F00000 { // 480.0
		return sign | E4M3NaN
	}
	return sign | roundMini(u, 3, 7)
}

// roundMini rounds the non-negative float32 bits u to a minifloat with mbits
// mantissa bits and exponent bias bias, nearest with ties to even. The caller
// handles values too large for the format.
func roundMini(u uint32, mbits, bias uint32) uint8 {
	if u < (128-bias)<<23 { // below the smallest normal: let the FPU round
		magic := (151 - bias - mbits) << 23 // 2^k whose ulp is the smallest subnormal
		s := math.Float32bits(math.Float32frombits(u) + math.Float32frombits(magic))
		return uint8(s - magic)
	}
	shift := 23 - mbits
	u += (bias-127)<<23 + (1<<(shift-1) - 1) + (u>>shift)&1
	return uint8(u >> shift)
}
