package quant

import (
	"fmt"

	"github.com/drama-tts/drama/safetensors/dtype"
)

// BlockFP8 is a matrix in block FP8: F8_E4M3 codes and one float32 scale
// per 128 x 128 block (a multiplier, stored as weight_scale_inv), row-major
// over ceil(Rows/128) x ceil(Cols/128) blocks. Edge blocks may be partial.
type BlockFP8 struct {
	Rows, Cols int
	Weight     []byte    // Rows x Cols
	ScaleInv   []float32 // ceil(Rows/128) x ceil(Cols/128)
}

// BlockDims returns the scale grid of a rows x cols matrix.
func BlockDims(rows, cols int) (int, int) {
	return (rows + FP8Block - 1) / FP8Block, (cols + FP8Block - 1) / FP8Block
}

// Validate checks sizes, that every scale is finite and positive, and that no
// weight byte is NaN (0x7F, 0xFF).
func (b *BlockFP8) Validate() error {
	_, err := b.validate()
	return err
}

// validate is Validate, returning each block's largest byte magnitude.
func (b *BlockFP8) validate() ([]uint8, error) {
	br, bc := BlockDims(b.Rows, b.Cols)
	if len(b.Weight) != b.Rows*b.Cols || len(b.ScaleInv) != br*bc {
		return nil, fmt.Errorf("%w: block FP8 [%d, %d] wants %d weight bytes and %d scales, got %d and %d",
			ErrShape, b.Rows, b.Cols, b.Rows*b.Cols, br*bc, len(b.Weight), len(b.ScaleInv))
	}
	for i, s := range b.ScaleInv {
		if !(s > 0) || s > 3.4e38 {
			return nil, fmt.Errorf("%w: scale_inv block %d is %v, want a finite positive number", ErrNonFinite, i, s)
		}
	}
	maxb := b.blockMax()
	for i, m := range maxb {
		if m == 0x7F {
			return nil, b.nanError(i)
		}
	}
	return maxb, nil
}

// nanError locates the first NaN byte of block i.
func (b *BlockFP8) nanError(i int) error {
	_, bc := BlockDims(b.Rows, b.Cols)
	r0, c0 := (i/bc)*FP8Block, (i%bc)*FP8Block
	for r := r0; r < min(r0+FP8Block, b.Rows); r++ {
		for c := c0; c < min(c0+FP8Block, b.Cols); c++ {
			if w := b.Weight[r*b.Cols+c]; w&0x7F == 0x7F {
				return fmt.Errorf("%w: weight byte 0x%02X (NaN) at row %d, column %d", ErrNonFinite, w, r, c)
			}
		}
	}
	return fmt.Errorf("%w: NaN in block %d", ErrNonFinite, i)
}

// blockMax returns each block's largest byte magnitude (b & 0x7F).
func (b *BlockFP8) blockMax() []uint8 {
	br, bc := BlockDims(b.Rows, b.Cols)
	maxb := make([]uint8, br*bc)
	for r := range b.Rows {
		row := b.Weight[r*b.Cols : (r+1)*b.Cols]
		band := maxb[(r/FP8Block)*bc : (r/FP8Block+1)*bc]
		for j := range band {
			band[j] = max(band[j], maxMagnitude(row[j*FP8Block:min((j+1)*FP8Block, len(row))]))
		}
	}
	return maxb
}

// scale returns the scale of the element at row r, column c.
func (b *BlockFP8) scale(r, c int) float32 {
	_, bc := BlockDims(b.Rows, b.Cols)
	return b.ScaleInv[(r/FP8Block)*bc+c/FP8Block]
}

// Dequantize writes f32(fp8) x scale into dst (Rows x Cols), rounded to
// BF16 when bf16 is set (the reference tools' intermediate).
func (b *BlockFP8) Dequantize(dst []float32, bf16 bool) {
	for r := range b.Rows {
		b.dequantRow(dst[r*b.Cols:(r+1)*b.Cols], r, bf16)
	}
}

func (b *BlockFP8) dequantRow(dst []float32, r int, bf16 bool) {
	row := b.Weight[r*b.Cols : (r+1)*b.Cols]
	for c0 := 0; c0 < b.Cols; c0 += FP8Block {
		s := b.scale(r, c0)
		for c := c0; c < min(c0+FP8Block, b.Cols); c++ {
			v := dtype.E4M3ToF32(row[c]) * s
			if bf16 {
				v = dtype.RoundBF16(v)
			}
			dst[c] = v
		}
	}
}

// Amax returns the largest dequantized magnitude, found from each block's
// largest byte (the product and the BF16 rounding are monotone).
func (b *BlockFP8) Amax(bf16 bool) float32 { return b.amaxOf(b.blockMax(), bf16) }

func (b *BlockFP8) amaxOf(maxb []uint8, bf16 bool) float32 {
	var amax float32
	for i, m := range maxb {
		v := dtype.E4M3ToF32(m) * b.ScaleInv[i]
		if bf16 {
			v = dtype.RoundBF16(v)
		}
		amax = max(amax, v)
	}
	return amax
}

// QuantizeFP8Block converts the row-major matrix x (rows x cols) to block
// FP8: each 128 x 128 block gets scale amax/448 (1 for an all-zero block) and
// codes e4m3(x / scale), clamped to +-448.
func QuantizeFP8Block(x []float32, rows, cols int) *BlockFP8 {
	br, bc := BlockDims(rows, cols)
	b := &BlockFP8{Rows: rows, Cols: cols, Weight: make([]byte, rows*cols), ScaleInv: make([]float32, br*bc)}
	for r := range rows {
		for c, v := range x[r*cols : (r+1)*cols] {
			i := (r/FP8Block)*bc + c/FP8Block
			b.ScaleInv[i] = max(b.ScaleInv[i], abs32(v))
		}
	}
	for i, a := range b.ScaleInv {
		b.ScaleInv[i] = a / dtype.E4M3Max
		if a == 0 {
			b.ScaleInv[i] = 1
		}
	}
	for r := range rows {
		for c, v := range x[r*cols : (r+1)*cols] {
			y := max(min(v/b.scale(r, c), dtype.E4M3Max), -dtype.E4M3Max)
			b.Weight[r*cols+c] = dtype.E4M3FromF32(y)
		}
	}
	return b
}
