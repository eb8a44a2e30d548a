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

func TestHalfToFloat32(t *testing.T) {
	for _, tc := range []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0}, {0x3c00, 1}, {0xc000, -2}, {0x3555, 0.333251953125}, {0x7bff, 65504},
		{0x0001, 1.0 / (1 << 24)}, {0x03ff, 1023.0 / (1 << 24)}, {0x0400, 1.0 / (1 << 14)}, {0x8001, -1.0 / (1 << 24)},
	} {
		if got := halfToFloat32(tc.h); got != tc.want {
			t.Errorf("%#04x: want %g, got %g", tc.h, tc.want, got)
		}
	}
	if got := halfToFloat32(0x7c00); !math.IsInf(float64(got), 1) {
		t.Errorf("0x7c00: want +Inf, got %g", got)
	}
	if got := halfToFloat32(0x7e01); !math.IsNaN(float64(got)) {
		t.Errorf("0x7e01: want NaN, got %g", got)
	}
	if got := halfToFloat32(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("0x8000: want -0, got %g", got)
	}
}

// typed makes an in-memory tensor of any dtype from raw little-endian bytes.
func typed(name string, d DType, shape []int64, raw []byte) *Tensor {
	st := &Storage{Key: name, DType: d, Numel: int64(len(raw) / d.Size()), Size: int64(len(raw)), src: bytesAt(raw)}
	return &Tensor{Name: name, DType: d, Shape: shape, Stride: contiguousStrides(shape), Storage: st}
}

// TestFoldNarrowAndWideInputs folds F16 v with BF16 g, and F64 v with F64 g:
// the result is F32 either way.
func TestFoldNarrowAndWideInputs(t *testing.T) {
	// v = [[3, 4], [1, 0]] in F16, g = [2, 0.5] in BF16.
	v16 := []byte{0x00, 0x42, 0x00, 0x44, 0x00, 0x3c, 0x00, 0x00}
	g16 := []byte{0x00, 0x40, 0x00, 0x3f}
	got, _, err := FoldWeightNorm([]*Tensor{typed("a.weight_g", BF16, []int64{2, 1}, g16), typed("a.weight_v", F16, []int64{2, 2}, v16)})
	if err != nil {
		t.Fatal(err)
	}
	if w := readF32(t, got[0]); !slices.Equal(w, []float32{1.2, 1.6, 0.5, 0}) {
		t.Errorf("F16/BF16: got %v", w)
	}
	var v64, g64 []byte
	for _, x := range []float64{3, 4, 1, 0} {
		v64 = binary.LittleEndian.AppendUint64(v64, math.Float64bits(x))
	}
	for _, x := range []float64{2, 0.5} {
		g64 = binary.LittleEndian.AppendUint64(g64, math.Float64bits(x))
	}
	got, _, err = FoldWeightNorm([]*Tensor{typed("b.parametrizations.weight.original0", F64, []int64{2, 1}, g64), typed("b.parametrizations.weight.original1", F64, []int64{2, 2}, v64)})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Name != "b.weight" || !got[0].Folded() {
		t.Errorf("name %q folded %v", got[0].Name, got[0].Folded())
	}
	if w := readF32(t, got[0]); !slices.Equal(w, []float32{1.2, 1.6, 0.5, 0}) {
		t.Errorf("F64: got %v", w)
	}
	_, _, err = FoldWeightNorm([]*Tensor{typed("c.weight_g", I32, []int64{1}, make([]byte, 4)), typed("c.weight_v", F32, []int64{1}, make([]byte, 4))})
	if !errors.Is(err, ErrWeightNorm) {
		t.Errorf("int g: want ErrWeightNorm, got %v", err)
	}
}
