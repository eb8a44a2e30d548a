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
// global scale global into q, round to nearest with ties to even. x must be
// finite.
func QuantizeNVFP4(q *NVFP4, x []float32, global float32) {
	q.Global = global
	sixG := 6 * global
	var codes [GroupSize]uint8
	for g := range len(x) / GroupSize {
		blk := x[g*GroupSize : (g+1)*GroupSize]
		var amax float32
		for _, v := range blk {
			amax = max(amax, abs32(v))
		}
		code, div := blockScale(amax, sixG, global)
		q.Scales[g] = code
		for i, v := range blk {
			codes[i] = dtype.E2M1FromF32(v / div)
		}
		dtype.PackE2M1(q.Packed[g*GroupSize/2:], codes[:])
	}
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
