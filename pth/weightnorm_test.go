package pth

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
)

func readF32(t *testing.T, x *Tensor) []float32 {
	t.Helper()
	if x.DType != F32 {
		t.Fatalf("%s: dtype %s", x.Name, x.DType)
	}
	b := make([]byte, x.Len())
	if _, err := x.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func ulps(a, b float32) int64 {
	ia, ib := int64(int32(math.Float32bits(a))), int64(int32(math.Float32bits(b)))
	if ia < 0 {
		ia = math.MinInt32 - ia
	}
	if ib < 0 {
		ib = math.MinInt32 - ib
	}
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// TestFoldMatchesTorch folds both weight-norm styles (including a
// transposed convolution, whose g is per input channel) and compares with
// the weights torch's remove_weight_norm / remove_parametrizations gave.
func TestFoldMatchesTorch(t *testing.T) {
	for _, file := range []string{"testdata/wn.pth", "testdata/keepvars.pth"} {
		r, err := OpenReader(file)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		want, err := OpenReader("testdata/wn_folded.pth")
		if err != nil {
			t.Fatal(err)
		}
		defer want.Close()
		got, n, err := FoldWeightNorm(r.Tensors)
		if err != nil {
			t.Fatal(err)
		}
		if n != 4 {
			t.Errorf("folded %d pairs, want 4", n)
		}
		var names, wantNames []string
		for _, x := range got {
			names = append(names, x.Name)
		}
		for _, x := range want.Tensors {
			wantNames = append(wantNames, x.Name)
		}
		if !slices.Equal(names, wantNames) {
			t.Fatalf("names: want %v, got %v", wantNames, names)
		}
		for i, g := range got {
			a, b := readF32(t, g), readF32(t, want.Tensors[i])
			if !slices.Equal(g.Shape, want.Tensors[i].Shape) {
				t.Errorf("%s: shape want %v got %v", g.Name, want.Tensors[i].Shape, g.Shape)
			}
			for j := range a {
				if d := ulps(a[j], b[j]); d > 2 {
					t.Errorf("%s[%d]: want %g, got %g (%d ulp)", g.Name, j, b[j], a[j], d)
					break
				}
			}
		}
	}
}

// synth makes an in-memory F32 tensor.
func synth(name string, shape []int64, vals []float32) *Tensor {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	st := &Storage{Key: name, DType: F32, Numel: int64(len(vals)), Size: int64(len(b)), src: bytesAt(b)}
	return &Tensor{Name: name, DType: F32, Shape: shape, Stride: contiguousStrides(shape), Storage: st}
}

type bytesAt []byte

func (b bytesAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, errors.New("EOF")
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, errors.New("EOF")
	}
	return n, nil
}

func TestFoldErrors(t *testing.T) {
	g := synth("c.weight_g", []int64{2, 1}, []float32{1, 2})
	v := synth("c.weight_v", []int64{2, 2}, []float32{3, 4, 0, 0})
	_, _, err := FoldWeightNorm([]*Tensor{g, v})
	var te *TensorError
	if !errors.Is(err, ErrWeightNorm) || !errors.As(err, &te) || te.Name != "c.weight" {
		t.Errorf("zero norm: want ErrWeightNorm naming c.weight, got %v", err)
	}
	_, _, err = FoldWeightNorm([]*Tensor{synth("x.parametrizations.weight.original0", []int64{2, 1}, []float32{1, 1})})
	if !errors.Is(err, ErrWeightNorm) || !errors.As(err, &te) || te.Name != "x.parametrizations.weight.original0" {
		t.Errorf("lone g: want ErrWeightNorm naming it, got %v", err)
	}
	g = synth("c.weight_g", []int64{3, 1}, []float32{1, 2, 3})
	v = synth("c.weight_v", []int64{2, 2}, []float32{3, 4, 1, 1})
	if _, _, err = FoldWeightNorm([]*Tensor{g, v}); !errors.Is(err, ErrWeightNorm) {
		t.Errorf("shape mismatch: want ErrWeightNorm, got %v", err)
	}
	g = synth("c.weight_g", []int64{2, 1}, []float32{float32(math.NaN()), 1})
	v = synth("c.weight_v", []int64{2, 2}, []float32{3, 4, 1, 1})
	if _, _, err = FoldWeightNorm([]*Tensor{g, v}); !errors.Is(err, ErrWeightNorm) {
		t.Errorf("NaN g: want ErrWeightNorm, got %v", err)
	}
}

func TestFoldDims(t *testing.T) {
	// g along dim 1, and a whole-tensor g.
	v := []float32{3, 1, 4, 1}
	for _, tc := range []struct {
		gShape []int64
		g      []float32
		want   []float32
	}{
		{[]int64{1, 2}, []float32{5, 2}, []float32{3, 2 * 1 / float32(math.Sqrt(2)), 4, 2 * 1 / float32(math.Sqrt(2))}},
		{[]int64{}, []float32{3}, []float32{3 * 3 / float32(math.Sqrt(27)), 3 / float32(math.Sqrt(27)), 4 * 3 / float32(math.Sqrt(27)), 3 / float32(math.Sqrt(27))}},
	} {
		got, _, err := FoldWeightNorm([]*Tensor{synth("a.weight_g", tc.gShape, tc.g), synth("a.weight_v", []int64{2, 2}, v)})
		if err != nil {
			t.Fatal(err)
		}
		a := readF32(t, got[0])
		for i := range a {
			if ulps(a[i], tc.want[i]) > 2 {
				t.Errorf("g %v: want %v, got %v", tc.gShape, tc.want, a)
				break
			}
		}
	}
}

func TestFoldEmpty(t *testing.T) {
	g := synth("e.weight_g", []int64{2, 1}, []float32{1, 2})
	v := synth("e.weight_v", []int64{2, 0}, nil)
	got, n, err := FoldWeightNorm([]*Tensor{g, v})
	if err != nil || n != 1 || got[0].Len() != 0 {
		t.Fatalf("empty v: %v, %d", err, n)
	}
}
