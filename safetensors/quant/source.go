package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/dtype"
)

// srcKind is how a routed expert's projection is stored in the input.
type srcKind int

const (
	srcFloat   srcKind = iota // weight BF16, F16 or F32
	srcFP8                    // weight F8_E4M3 + weight_scale_inv F32
	srcNVFP4                  // weight U8 + weight_scale + weight_scale_2 (ModelOpt)
	srcNVFP4CT                // weight_packed U8 + weight_scale + weight_global_scale
)

// String names the storage kind for messages.
func (k srcKind) String() string {
	return [...]string{"float", "block FP8", "NVFP4 (ModelOpt)", "NVFP4 (compressed-tensors)"}[k]
}

// module is one routed expert projection of the input and its tensors.
type module struct {
	ref     ExpertRef
	tensors map[string]*safetensors.Tensor // by suffix: weight, weight_scale_inv, ...
	kind    srcKind
	rows    int
	cols    int // logical columns (unpacked for NVFP4)
}

// classify finds the storage kind and shape of m, or says what is missing.
func (m *module) classify() error {
	t := m.tensors
	switch {
	case t["weight_packed"] != nil:
		m.kind = srcNVFP4CT
		return m.needNVFP4("weight_packed", "weight_global_scale")
	case t["weight"] == nil:
		return fmt.Errorf("quant: %s: no weight tensor", m.ref.Module)
	case t["weight"].DType == safetensors.F8E4M3:
		m.kind = srcFP8
		return m.needFP8()
	case t["weight"].DType == safetensors.U8:
		m.kind = srcNVFP4
		return m.needNVFP4("weight", "weight_scale_2")
	case t["weight"].DType == safetensors.BF16, t["weight"].DType == safetensors.F16, t["weight"].DType == safetensors.F32:
		m.kind = srcFloat
		return m.setShape(t["weight"], 1)
	}
	return fmt.Errorf("quant: %s.weight: dtype %s is not a source this tool reads (BF16, F16, F32, F8_E4M3 or NVFP4)", m.ref.Module, t["weight"].DType)
}

func (m *module) setShape(w *safetensors.Tensor, colsPerElem int) error {
	if len(w.Shape) != 2 || w.Shape[0] <= 0 || w.Shape[1] <= 0 {
		return fmt.Errorf("%w: %s: want a 2-D weight with rows and columns, got shape %v", ErrShape, w.Name, w.Shape)
	}
	m.rows, m.cols = int(w.Shape[0]), int(w.Shape[1])*colsPerElem
	return nil
}

func (m *module) needFP8() error {
	w := m.tensors["weight"]
	if err := m.setShape(w, 1); err != nil {
		return err
	}
	s := m.tensors["weight_scale_inv"]
	if s == nil {
		return fmt.Errorf("quant: %s: block-FP8 weight without its scale tensor %s.weight_scale_inv", w.Name, m.ref.Module)
	}
	br, bc := BlockDims(m.rows, m.cols)
	if s.DType != safetensors.F32 || len(s.Shape) != 2 || s.Shape[0] != int64(br) || s.Shape[1] != int64(bc) {
		return fmt.Errorf("%w: %s: want F32[%d %d] for a [%d %d] weight in 128x128 blocks, got %s%v",
			ErrShape, s.Name, br, bc, m.rows, m.cols, s.DType, s.Shape)
	}
	return nil
}

func (m *module) needNVFP4(packed, global string) error {
	w := m.tensors[packed]
	if err := m.setShape(w, 2); err != nil {
		return err
	}
	s, g := m.tensors["weight_scale"], m.tensors[global]
	if s == nil || g == nil {
		return fmt.Errorf("quant: %s: NVFP4 weight without weight_scale or %s", m.ref.Module, global)
	}
	if w.DType != safetensors.U8 || s.DType != safetensors.F8E4M3 || g.DType != safetensors.F32 || g.NumElements() != 1 ||
		len(s.Shape) != 2 || s.Shape[0] != int64(m.rows) || s.Shape[1]*GroupSize != int64(m.cols) {
		return fmt.Errorf("%w: %s: NVFP4 tensors do not fit together (%s%v, %s%v, %s%v)",
			ErrShape, m.ref.Module, w.DType, w.Shape, s.DType, s.Shape, g.DType, g.Shape)
	}
	return nil
}

// loadFP8 reads a block-FP8 source and checks it for NaN.
func (m *module) loadFP8() (*BlockFP8, error) {
	b, _, err := m.loadFP8Max()
	return b, err
}

// loadFP8Max is loadFP8, also returning each block's largest byte.
func (m *module) loadFP8Max() (*BlockFP8, []uint8, error) {
	w, err := m.tensors["weight"].Bytes()
	if err != nil {
		return nil, nil, err
	}
	sb, err := m.tensors["weight_scale_inv"].Bytes()
	if err != nil {
		return nil, nil, err
	}
	b := &BlockFP8{Rows: m.rows, Cols: m.cols, Weight: w, ScaleInv: make([]float32, len(sb)/4)}
	for i := range b.ScaleInv {
		b.ScaleInv[i] = math.Float32frombits(binary.LittleEndian.Uint32(sb[4*i:]))
	}
	maxb, err := b.validate()
	if err != nil {
		return nil, nil, fmt.Errorf("quant: %s: %w", m.ref.Module, err)
	}
	return b, maxb, nil
}

// loadFloats reads the projection as float32 values: decoded floats, or the
// dequantized FP8 (BF16-rounded when bf16) or NVFP4 source.
func (m *module) loadFloats(bf16 bool) ([]float32, error) {
	x := make([]float32, m.rows*m.cols)
	switch m.kind {
	case srcFP8:
		b, err := m.loadFP8()
		if err != nil {
			return nil, err
		}
		b.Dequantize(x, bf16)
	case srcNVFP4, srcNVFP4CT:
		q, err := m.loadNVFP4()
		if err != nil {
			return nil, err
		}
		q.Dequantize(x)
	default:
		if err := decodeFloats(x, m.tensors["weight"]); err != nil {
			return nil, err
		}
	}
	if _, err := Amax(x); err != nil {
		return nil, fmt.Errorf("quant: %s: %w", m.ref.Module, err)
	}
	return x, nil
}

func decodeFloats(dst []float32, t *safetensors.Tensor) error {
	b, err := t.Bytes()
	if err != nil {
		return err
	}
	switch t.DType {
	case safetensors.BF16:
		dtype.DecodeBF16(dst, b)
	case safetensors.F16:
		dtype.DecodeF16(dst, b)
	default:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return nil
}

// loadNVFP4 reads an NVFP4 source; the compressed-tensors global scale is a
// divisor and is inverted.
func (m *module) loadNVFP4() (*NVFP4, error) {
	packed, global := "weight", "weight_scale_2"
	if m.kind == srcNVFP4CT {
		packed, global = "weight_packed", "weight_global_scale"
	}
	q := &NVFP4{Rows: m.rows, Cols: m.cols}
	var err error
	if q.Packed, err = m.tensors[packed].Bytes(); err != nil {
		return nil, err
	}
	if q.Scales, err = m.tensors["weight_scale"].Bytes(); err != nil {
		return nil, err
	}
	g, err := m.tensors[global].Bytes()
	if err != nil {
		return nil, err
	}
	q.Global = math.Float32frombits(binary.LittleEndian.Uint32(g))
	if m.kind == srcNVFP4CT {
		q.Global = 1 / q.Global
	}
	return q, nil
}
