package quant

import (
	"fmt"
	"strconv"

	"github.com/drama-tts/drama/safetensors"
)

// fusedPair is a fused expert weight and its optional block-FP8 scale.
type fusedPair struct {
	ref           FusedRef
	weight, scale *safetensors.Tensor
}

// expandFused turns fused 3-D expert tensors into per-expert modules whose
// tensors are views of slices of the fused ones, named as per-expert
// checkpoints name them (module.E.gate_proj, ...). It returns the modules,
// their names in order, and for each fused tensor the modules taken from it.
func expandFused(pairs map[string]*fusedPair, order []string, r *Recipe) (map[string]*module, []string, map[string][]string, error) {
	mods := map[string]*module{}
	var names []string
	from := map[string][]string{}
	for _, key := range order {
		p := pairs[key]
		if p.weight == nil {
			return nil, nil, nil, fmt.Errorf("%w: %s has a scale tensor but no weight", ErrShape, key)
		}
		ms, err := splitFused(p, r)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, m := range ms {
			mods[m.ref.Module] = m
			names = append(names, m.ref.Module)
			from[p.weight.Name] = append(from[p.weight.Name], m.ref.Module)
			if p.scale != nil {
				from[p.scale.Name] = nil // consumed, emits nothing
			}
		}
	}
	return mods, names, from, nil
}

// part is one projection's rows within an expert's slab of a fused tensor.
type part struct {
	proj       string
	row0, rows int64
}

// splitFused slices one fused tensor (and its scale) into per-expert modules.
func splitFused(p *fusedPair, r *Recipe) ([]*module, error) {
	w := p.weight
	if len(w.Shape) != 3 || w.Shape[0] <= 0 || w.Shape[1] <= 0 || w.Shape[2] <= 0 {
		return nil, fmt.Errorf("%w: %s: want a 3-D [experts, rows, columns] tensor, got %v", ErrShape, w.Name, w.Shape)
	}
	e, rows, cols := w.Shape[0], w.Shape[1], w.Shape[2]
	parts := []part{{r.Down, 0, rows}}
	if p.ref.Proj == r.GateUp {
		if rows%2 != 0 || (p.scale != nil && (rows/2)%FP8Block != 0) {
			return nil, fmt.Errorf("%w: %s: %d rows cannot be split into gate and up halves (with block-FP8 scales each half must be a multiple of %d)", ErrShape, w.Name, rows, FP8Block)
		}
		parts = []part{{r.Gate, 0, rows / 2}, {r.Up, rows / 2, rows / 2}}
	}
	var out []*module
	for x := range e {
		for _, pt := range parts {
			m, err := fusedModule(p, x, pt, rows, cols)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// fusedModule makes expert x's module for one part of a fused tensor.
func fusedModule(p *fusedPair, x int64, pt part, rows, cols int64) (*module, error) {
	name := p.ref.Module + "." + strconv.FormatInt(x, 10) + "." + pt.proj
	m := &module{ref: ExpertRef{Module: name, Layer: p.ref.Layer, Expert: int(x), Proj: pt.proj, Suffix: "weight"},
		tensors: map[string]*safetensors.Tensor{}}
	ds := int64(p.weight.DType.Size())
	w, err := p.weight.Slice(name+".weight", (x*rows+pt.row0)*cols*ds, pt.rows*cols*ds, []int64{pt.rows, cols})
	if err != nil {
		return nil, err
	}
	m.tensors["weight"] = w
	if p.scale != nil {
		s, err := scaleSlice(p.scale, name, x, pt, rows, cols)
		if err != nil {
			return nil, err
		}
		m.tensors["weight_scale_inv"] = s
	}
	return m, nil
}

// scaleSlice cuts expert x's part from a fused [experts, rows/128, cols/128]
// F32 scale tensor.
func scaleSlice(s *safetensors.Tensor, name string, x int64, pt part, rows, cols int64) (*safetensors.Tensor, error) {
	br, bc := BlockDims(int(rows), int(cols))
	if s.DType != safetensors.F32 || len(s.Shape) != 3 || s.Shape[1] != int64(br) || s.Shape[2] != int64(bc) {
		return nil, fmt.Errorf("%w: %s: want F32[experts %d %d], got %s%v", ErrShape, s.Name, br, bc, s.DType, s.Shape)
	}
	r0, n := pt.row0/FP8Block, (pt.rows+FP8Block-1)/FP8Block
	return s.Slice(name+".weight_scale_inv", ((x*int64(br))+r0)*int64(bc)*4, n*int64(bc)*4, []int64{n, int64(bc)})
}
