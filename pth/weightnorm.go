package pth

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
)

// Weight-norm key suffixes: torch.nn.utils.weight_norm (old) and
// torch.nn.utils.parametrizations.weight_norm (new).
const (
	oldG = "weight_g"
	oldV = "weight_v"
	newG = "parametrizations.weight.original0"
	newV = "parametrizations.weight.original1"
)

// foldChunk is the number of bytes of v read at once.
const foldChunk = 1 << 20

// fold describes a tensor computed as w = g * v / ||v||, with the norm taken
// over every dimension but dim (all of them when dim is -1).
type fold struct {
	g, v  *Tensor
	dim   int
	inner int64     // elements per step along dim
	scale []float32 // g / ||v|| for each index along dim
}

// Folded reports whether t is computed by folding a weight-norm pair.
func (t *Tensor) Folded() bool { return t.fold != nil }

// FoldedFrom returns the pair a folded tensor is computed from (g and v),
// or nils when t is not folded.
func (t *Tensor) FoldedFrom() (g, v *Tensor) {
	if t.fold == nil {
		return nil, nil
	}
	return t.fold.g, t.fold.v
}

// FoldWeightNorm replaces every weight-norm pair (P+"weight_g", P+"weight_v")
// or (P+"parametrizations.weight.original0", P+"...original1") by one F32
// tensor P+"weight" = g * v / ||v|| computed in FP32 from float64 sums of
// squares, at the position of the pair's first tensor. The dimension is
// inferred from g's shape: its one axis longer than 1 (for ConvTranspose the
// input channel), or the whole tensor when g has one element. It returns the
// new list and the number of pairs folded. A lone half of a pair, a shape
// that does not fit, a zero or non-finite norm is an error naming the tensor.
func FoldWeightNorm(ts []*Tensor) ([]*Tensor, int, error) {
	byName := make(map[string]*Tensor, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	var out, folds []*Tensor
	done := map[string]bool{}
	for _, t := range ts {
		if done[t.Name] {
			continue
		}
		p, g, v, ok, err := pairOf(t, byName)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			out = append(out, t)
			continue
		}
		w, err := newFold(p+"weight", g, v, byName)
		if err != nil {
			return nil, 0, err
		}
		done[g.Name], done[v.Name] = true, true
		out, folds = append(out, w), append(folds, w)
	}
	return out, len(folds), computeScales(folds)
}

// pairOf finds the weight-norm pair t belongs to.
func pairOf(t *Tensor, byName map[string]*Tensor) (prefix string, g, v *Tensor, ok bool, err error) {
	for _, s := range [][2]string{{oldG, oldV}, {newG, newV}} {
		for i, suffix := range s {
			p, found := strings.CutSuffix(t.Name, suffix)
			if !found {
				continue
			}
			other := byName[p+s[1-i]]
			if other == nil {
				return "", nil, nil, false, tensorErr(t.Name, ErrWeightNorm, "no %q to pair with", p+s[1-i])
			}
			if i == 0 {
				return p, t, other, true, nil
			}
			return p, other, t, true, nil
		}
	}
	return "", nil, nil, false, nil
}

func newFold(name string, g, v *Tensor, byName map[string]*Tensor) (*Tensor, error) {
	if byName[name] != nil {
		return nil, tensorErr(name, ErrWeightNorm, "present alongside %q and %q", g.Name, v.Name)
	}
	if !g.DType.IsFloat() || !v.DType.IsFloat() || g.DType == F8E4M3 || g.DType == F8E5M2 || v.DType == F8E4M3 || v.DType == F8E5M2 {
		return nil, tensorErr(v.Name, ErrWeightNorm, "dtypes %s and %s: want F64, F32, F16 or BF16", g.DType, v.DType)
	}
	dim, err := normDim(g, v)
	if err != nil {
		return nil, err
	}
	f := &fold{g: g, v: v, dim: dim, inner: 1}
	if dim >= 0 {
		for _, s := range v.Shape[dim+1:] {
			f.inner *= s
		}
	}
	return &Tensor{Name: name, DType: F32, Shape: v.Shape, Stride: contiguousStrides(v.Shape), fold: f}, nil
}

// normDim infers the weight-norm dimension from g's shape.
func normDim(g, v *Tensor) (int, error) {
	if g.Numel() == 1 && (len(g.Shape) == 0 || len(g.Shape) == len(v.Shape)) {
		return -1, nil // one g: the whole-tensor norm (the same as dim 0 when v's dim 0 is 1)
	}
	dim := -1
	if len(g.Shape) == len(v.Shape) {
		for i, s := range g.Shape {
			if s != 1 && dim >= 0 {
				dim = -2
				break
			}
			if s != 1 {
				dim = i
			}
		}
	}
	if dim < 0 || g.Shape[dim] != v.Shape[dim] {
		return 0, tensorErr(g.Name, ErrWeightNorm, "shape %v does not fit %q of shape %v: want v's rank with v's size on one axis and 1 elsewhere", g.Shape, v.Name, v.Shape)
	}
	return dim, nil
}

func contiguousStrides(shape []int64) []int64 {
	st := make([]int64, len(shape))
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= max(shape[i], 1)
	}
	return st
}

// computeScales fills every fold's g / ||v|| in parallel.
func computeScales(folds []*Tensor) error {
	var wg sync.WaitGroup
	errs := make([]error, len(folds))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, w := range folds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = w.fold.computeScale(w.Name)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (f *fold) computeScale(name string) error {
	inner, dimN := f.steps()
	if f.v.Numel() == 0 {
		f.scale = make([]float32, dimN) // nothing to scale
		return nil
	}
	sums := make([]float64, dimN)
	if err := forEachChunk(f.v, func(first int64, xs []float64) {
		pos, idx := first%inner, (first/inner)%dimN
		for _, x := range xs {
			sums[idx] += x * x
			if pos++; pos == inner {
				pos = 0
				if idx++; idx == dimN {
					idx = 0
				}
			}
		}
	}); err != nil {
		return err
	}
	gs := make([]float64, 0, dimN)
	if err := forEachChunk(f.g, func(_ int64, xs []float64) { gs = append(gs, xs...) }); err != nil {
		return err
	}
	f.scale = make([]float32, dimN)
	for i, s := range sums {
		norm := float32(math.Sqrt(s))
		if norm == 0 || math.IsInf(float64(norm), 0) || math.IsNaN(float64(norm)) || math.IsNaN(gs[i]) || math.IsInf(gs[i], 0) {
			return tensorErr(name, ErrWeightNorm, "slice %d along dim %d: ||v|| = %g, g = %g: cannot fold a zero or non-finite norm", i, f.dim, norm, gs[i])
		}
		f.scale[i] = float32(gs[i]) / norm
	}
	return nil
}

// steps returns the elements per step along dim and the steps: the scale
// of logical element i is scale[(i / inner) % dimN].
func (f *fold) steps() (inner, dimN int64) {
	if f.dim < 0 {
		return 1, 1
	}
	return f.inner, f.v.Shape[f.dim]
}

// forEachChunk streams a float tensor's elements as float64, a chunk at a
// time, with the index of each chunk's first element.
func forEachChunk(t *Tensor, fn func(first int64, xs []float64)) error {
	esz := int64(t.DType.Size())
	per := int64(foldChunk) / esz
	buf := make([]byte, min(t.Len(), per*esz))
	xs := make([]float64, min(t.Numel(), per))
	for first := int64(0); first < t.Numel(); first += per {
		n := min(per, t.Numel()-first)
		p := buf[:n*esz]
		if _, err := t.ReadAt(p, first*esz); err != nil {
			return err
		}
		for j := range n {
			if t.DType == F32 {
				xs[j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(p[4*j:])))
			} else {
				xs[j] = decodeFloat(t.DType, p[j*esz:])
			}
		}
		fn(first, xs[:n])
	}
	return nil
}

var foldBufs = sync.Pool{New: func() any { return new([]byte) }}

// readAt writes the folded weight's F32 bytes for p at byte off.
func (f *fold) readAt(p []byte, off int64) error {
	first, last := off/4, (off+int64(len(p))+3)/4
	n, vesz := last-first, int64(f.v.DType.Size())
	bp := foldBufs.Get().(*[]byte)
	defer foldBufs.Put(bp)
	if need := n * (vesz + 4); int64(cap(*bp)) < need {
		*bp = make([]byte, need)
	}
	src, dst := (*bp)[:n*vesz], (*bp)[n*vesz:n*(vesz+4)]
	if off%4 == 0 && len(p)%4 == 0 {
		dst = p
	}
	if _, err := f.v.ReadAt(src, first*vesz); err != nil {
		return err
	}
	f.scaleInto(dst, src, first)
	if &dst[0] != &p[0] {
		copy(p, dst[off-first*4:])
	}
	return nil
}

// scaleInto writes v's elements from first, times their scale, as F32.
func (f *fold) scaleInto(dst, src []byte, first int64) {
	inner, dimN := f.steps()
	pos, idx := first%inner, (first/inner)%dimN
	vesz := int64(f.v.DType.Size())
	for j := int64(0); j < int64(len(dst))/4; j++ {
		var x float32
		if f.v.DType == F32 {
			x = math.Float32frombits(binary.LittleEndian.Uint32(src[4*j:]))
		} else {
			x = float32(decodeFloat(f.v.DType, src[j*vesz:]))
		}
		binary.LittleEndian.PutUint32(dst[4*j:], math.Float32bits(x*f.scale[idx]))
		if pos++; pos == inner {
			pos = 0
			if idx++; idx == dimN {
				idx = 0
			}
		}
	}
}

// decodeFloat reads one little-endian element of a float dtype.
func decodeFloat(d DType, b []byte) float64 {
	switch d {
	case F64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case F16:
		return float64(halfToFloat32(binary.LittleEndian.Uint16(b)))
	case BF16:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	}
	panic(fmt.Sprintf("pth: decodeFloat(%s)", d))
}

// halfToFloat32 widens an IEEE 754 binary16 value exactly.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	f := float32(mant) / (1 << 24)
	if sign != 0 {
		return -f
	}
	return f
}
