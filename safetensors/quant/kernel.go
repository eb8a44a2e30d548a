package quant

import (
	"errors"
	"fmt"
	"math"

	"github.com/drama-tts/drama/safetensors/dtype"
)

// GroupSize is the number of consecutive elements along a row that share one
// NVFP4 block scale.
const GroupSize = 16

// FP8Block is the edge of the square blocks of a block-FP8 weight.
const FP8Block = 128

// e2m1MaxTimesE4M3Max is 6 x 448: the largest NVFP4 magnitude a global
// scale of 1 can reach.
const e2m1MaxTimesE4M3Max = 6 * 448

var (
	// ErrNonFinite matches a source holding NaN or infinity (FP8 bytes 0x7F
	// or 0xFF, or a non-finite float).
	ErrNonFinite = errors.New("quant: NaN or infinity in the source")
	// ErrShape matches a tensor whose shape does not fit the quantization.
	ErrShape = errors.New("quant: bad shape")
)

// NVFP4 is one matrix in NVFP4: E2M1 codes packed two to a byte (even
// element in the low nibble), one F8_E4M3 scale per 16 elements of a row,
// and a float32 global scale (ModelOpt's weight_scale_2, a multiplier).
type NVFP4 struct {
	Rows, Cols int
	Packed     []byte // Rows x Cols/2
	Scales     []byte // Rows x Cols/16, F8_E4M3 codes
	Global     float32
}

// NewNVFP4 allocates an NVFP4 matrix of rows x cols; cols must be a
// multiple of 16.
func NewNVFP4(rows, cols int) (*NVFP4, error) {
	if rows < 0 || cols <= 0 || cols%GroupSize != 0 {
		return nil, fmt.Errorf("%w: NVFP4 needs columns a positive multiple of %d, got [%d, %d]", ErrShape, GroupSize, rows, cols)
	}
	return &NVFP4{Rows: rows, Cols: cols, Packed: make([]byte, rows*cols/2), Scales: make([]byte, rows*cols/GroupSize)}, nil
}

// GlobalScale returns the NVFP4 global scale for a tensor (or a group of
// tensors sharing one) whose largest magnitude is amax: amax / (6 x 448) in
// float32. An all-zero tensor gets 1, so every scale stays finite and
// positive.
func GlobalScale(amax float32) float32 {
	if amax == 0 {
		return 1
	}
	return amax / e2m1MaxTimesE4M3Max
}

// blockScale returns the E4M3 scale code of a 16-block whose largest
// magnitude is amax, and its float32 divisor (scale x global, rounded to
// float32). sixG is 6 x global rounded to float32.
func blockScale(amax, sixG, global float32) (uint8, float32) {
	s := amax / sixG
	if s == 0 {
		s = 1
	}
	s = min(s, dtype.E4M3Max)
	code := dtype.E4M3FromF32(s)
	return code, dtype.E4M3ToF32(code) * global
}

// QuantizeNVFP4 quantizes the row-major matrix x (q.Rows x q.Cols) with the
// global scale global into q, round to nearest with ties to even, exactly as
// dividing each element by its block's divisor and rounding to E2M1 would.
// Instead of a division per element it compares magnitudes with the exact
// thresholds of each block divisor, computed once per scale byte. x must be
// finite.
func QuantizeNVFP4(q *NVFP4, x []float32, global float32) {
	q.Global = global
	sixG := 6 * global
	var cache [128]*thresholds
	for g := range len(x) / GroupSize {
		blk := x[g*GroupSize : (g+1)*GroupSize : (g+1)*GroupSize]
		var amax uint32 // bits of the largest magnitude (finite input)
		for _, v := range blk {
			amax = max(amax, math.Float32bits(v)&^(1<<31))
		}
		code, div := blockScale(math.Float32frombits(amax), sixG, global)
		q.Scales[g] = code
		out := q.Packed[g*GroupSize/2 : (g+1)*GroupSize/2 : (g+1)*GroupSize/2]
		if div == 0 { // the scale underflowed: keep the reference's 0/0
			quantizeByDivision(out, blk, div)
			continue
		}
		t := cache[code&0x7F]
		if t == nil {
			t = newThresholds(div)
			cache[code&0x7F] = t
		}
		for i := range out {
			out[i] = t.code(blk[2*i]) | t.code(blk[2*i+1])<<4
		}
	}
}

// quantizeByDivision rounds blk[i] / div to E2M1 and packs the codes.
func quantizeByDivision(out []byte, blk []float32, div float32) {
	var codes [GroupSize]uint8
	for i, v := range blk {
		codes[i] = dtype.E2M1FromF32(v / div)
	}
	dtype.PackE2M1(out, codes[:])
}

// thresholds holds, for one block divisor d, the smallest magnitudes whose
// quotient by d rounds (in float32) past each E2M1 rounding bound: t[k] for
// code k+1 (k = 0..6), and nz, the smallest magnitude whose quotient is not
// zero (below it a negative element's quotient is -0 and keeps no sign).
type thresholds struct {
	t  [7]uint64 // float32 bits of the thresholds, widened
	nz uint64
}

// e2m1Bounds are the E2M1 rounding bounds; odd codes are reached only past
// a bound (ties go down to the even code), even codes at it.
var e2m1Bounds = [7]struct {
	v      float32
	strict bool
}{{0.25, true}, {0.75, false}, {1.25, true}, {1.75, false}, {2.5, true}, {3.5, false}, {5, true}}

func newThresholds(div float32) *thresholds {
	t := &thresholds{}
	t.nz = uint64(math.Float32bits(smallestAbove(div, 0, true)))
	for k, b := range e2m1Bounds {
		t.t[k] = uint64(math.Float32bits(smallestAbove(div, b.v, b.strict)))
	}
	return t
}

// smallestAbove returns the smallest non-negative float32 x with x/div > v
// (strict) or x/div >= v, the quotient rounded to float32 as the division
// path does. Division is monotone, so a start near v*div and a few steps of
// one ulp find it.
func smallestAbove(div, v float32, strict bool) float32 {
	ok := func(x float32) bool {
		y := x / div
		return y > v || (!strict && y == v)
	}
	x := float32(float64(v) * float64(div))
	if v == 0 {
		x = float32(float64(div) * 0x1p-150)
	}
	for !ok(x) {
		x = math.Nextafter32(x, float32(math.Inf(1)))
	}
	for x > 0 && ok(math.Nextafter32(x, 0)) {
		x = math.Nextafter32(x, 0)
	}
	return x
}

// code returns the E2M1 code of v divided by the thresholds' divisor. On
// non-negative floats the order of the bit patterns is the order of the
// values, so each comparison is an integer subtraction whose borrow is the
// answer: (t - a - 1) >> 63 is 1 exactly when a >= t.
func (t *thresholds) code(v float32) uint8 {
	bits := math.Float32bits(v)
	a := uint64(bits &^ (1 << 31))
	c := (t.t[0]-a-1)>>63 + (t.t[1]-a-1)>>63 + (t.t[2]-a-1)>>63 + (t.t[3]-a-1)>>63 +
		(t.t[4]-a-1)>>63 + (t.t[5]-a-1)>>63 + (t.t[6]-a-1)>>63
	neg := uint64(bits>>31) & ((t.nz - a - 1) >> 63)
	return uint8(c | neg<<3)
}

// Dequantize writes q's values into dst (q.Rows x q.Cols floats):
// e2m1 x (scale x global), the product of the scales rounded to float32.
func (q *NVFP4) Dequantize(dst []float32) {
	for g := range len(q.Scales) {
		div := dtype.E4M3ToF32(q.Scales[g]) * q.Global
		for i := range GroupSize / 2 {
			b := q.Packed[g*GroupSize/2+i]
			dst[g*GroupSize+2*i] = dtype.E2M1ToF32(b&15) * div
			dst[g*GroupSize+2*i+1] = dtype.E2M1ToF32(b>>4) * div
		}
	}
}

// Amax returns the largest magnitude in x, or ErrNonFinite.
func Amax(x []float32) (float32, error) {
	var m float32
	for i, v := range x {
		a := abs32(v)
		if a > math.MaxFloat32 || a != a {
			return 0, fmt.Errorf("%w: element %d is %v", ErrNonFinite, i, v)
		}
		m = max(m, a)
	}
	return m, nil
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
