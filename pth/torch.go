package pth

import (
	"fmt"
	"math/bits"
)

type globalKind uint8

const (
	gOrderedDict globalKind = iota + 1
	gRebuildV2
	gRebuildV3
	gParameter
	gParameterState
	gStorage
	gDType
)

// global is an allowed global: an inert token, never a callable.
type global struct {
	kind         globalKind
	module, name string
	dtype        DType // for gStorage (U8 when untyped) and gDType
}

var rebuildGlobals = map[string]globalKind{
	"_rebuild_tensor_v2":            gRebuildV2,
	"_rebuild_tensor_v3":            gRebuildV3,
	"_rebuild_parameter":            gParameter,
	"_rebuild_parameter_with_state": gParameterState,
}

// unsupportedGlobals are valid torch names for features this reader does not
// support; they are refused with ErrUnsupported rather than ErrGlobal.
var unsupportedGlobals = map[string]bool{
	"torch.ComplexFloatStorage": true, "torch.ComplexDoubleStorage": true, "torch.QInt8Storage": true,
	"torch.QUInt8Storage": true, "torch.QInt32Storage": true, "torch.QUInt4x2Storage": true,
	"torch.QUInt2x4Storage": true, "torch._utils._rebuild_qtensor": true,
	"torch._utils._rebuild_sparse_tensor": true, "torch._utils._rebuild_meta_tensor_no_storage": true,
	"torch._utils._rebuild_wrapper_subclass": true, "torch._utils._rebuild_nested_tensor": true,
	"torch._tensor._rebuild_from_type_v2": true, "torch.serialization._get_layout": true,
	"torch.float8_e5m2fnuz": true, "torch.float8_e4m3fnuz": true, "torch.float8_e8m0fnu": true,
	"torch.complex32": true, "torch.complex64": true, "torch.complex128": true,
}

// lookupGlobal maps module.name through the fixed allow-list.
func lookupGlobal(module, name string) (*global, error) {
	g := &global{module: module, name: name}
	switch module {
	case "collections":
		if name == "OrderedDict" {
			g.kind = gOrderedDict
			return g, nil
		}
	case "torch._utils":
		if k, ok := rebuildGlobals[name]; ok {
			g.kind = k
			return g, nil
		}
	case "torch.storage":
		if name == "UntypedStorage" {
			g.kind, g.dtype = gStorage, U8
			return g, nil
		}
	case "torch":
		if d, ok := storageDTypes[name]; ok {
			g.kind, g.dtype = gStorage, d
			return g, nil
		}
		if d, ok := dtypeGlobals[name]; ok {
			g.kind, g.dtype = gDType, d
			return g, nil
		}
	}
	if unsupportedGlobals[module+"."+name] {
		return nil, ErrUnsupported
	}
	return nil, ErrGlobal
}

// apply performs REDUCE for an allowed constructor.
func (m *vm) apply(g *global, args tuple) (any, error) {
	switch g.kind {
	case gOrderedDict:
		if len(args) != 0 {
			return nil, m.errf(ErrArgs, "OrderedDict with %d arguments: want none", len(args))
		}
		return newDict(true), nil
	case gRebuildV2, gRebuildV3:
		if m.tensors++; m.tensors > m.lim.MaxTensors {
			return nil, m.errf(ErrLimit, "more than %d tensors", m.lim.MaxTensors)
		}
		t, err := rebuildTensor(g.kind, args, m.lim)
		if err != nil {
			return nil, m.errf(err, "%s", g.name)
		}
		return t, nil
	case gParameter, gParameterState:
		return m.parameter(g, args)
	}
	return nil, m.errf(ErrArgs, "%s.%s is not a constructor", g.module, g.name)
}

// parameter unwraps nn.Parameter(tensor, requires_grad, hooks[, state]).
func (m *vm) parameter(g *global, args tuple) (any, error) {
	want := 3
	if g.kind == gParameterState {
		want = 4
	}
	if len(args) != want {
		return nil, m.errf(ErrArgs, "%s with %d arguments: want %d", g.name, len(args), want)
	}
	t, ok := args[0].(*Tensor)
	_, okGrad := args[1].(bool)
	if !ok || !okGrad || !emptyDict(args[2]) {
		return nil, m.errf(ErrArgs, "%s(%s, %s, %s): want (tensor, bool, empty hooks)", g.name, typeName(args[0]), typeName(args[1]), typeName(args[2]))
	}
	if want == 4 && args[3] != nil && !emptyDict(args[3]) {
		return nil, m.errf(ErrUnsupported, "parameter with Python attributes")
	}
	return t, nil
}

func emptyDict(v any) bool {
	d, ok := v.(*dict)
	return ok && len(d.keys) == 0
}

// rebuildTensor checks the arguments of _rebuild_tensor_v2
// (storage, offset, size, stride, requires_grad, hooks[, metadata]) or v3
// (the same with a dtype before metadata) and builds the tensor view.
func rebuildTensor(kind globalKind, args tuple, lim Limits) (*Tensor, error) {
	n := len(args)
	if (kind == gRebuildV2 && n != 6 && n != 7) || (kind == gRebuildV3 && n != 7 && n != 8) {
		return nil, fmt.Errorf("%w: %d arguments", ErrArgs, n)
	}
	st, ok := args[0].(*Storage)
	if !ok {
		return nil, fmt.Errorf("%w: argument 0 is %s, want a storage", ErrArgs, typeName(args[0]))
	}
	off, ok1 := args[1].(int64)
	size, ok2 := intTuple(args[2])
	stride, ok3 := intTuple(args[3])
	grad, ok4 := args[4].(bool)
	if !ok1 || !ok2 || !ok3 || !ok4 || !emptyDict(args[5]) {
		return nil, fmt.Errorf("%w: want (storage, int, tuple of int, tuple of int, bool, empty OrderedDict), got (storage, %s, %s, %s, %s, %s)",
			ErrArgs, typeName(args[1]), typeName(args[2]), typeName(args[3]), typeName(args[4]), typeName(args[5]))
	}
	t := &Tensor{Storage: st, Offset: off, Shape: size, Stride: stride, RequiresGrad: grad, DType: st.DType}
	meta := 6
	if kind == gRebuildV3 {
		g, ok := args[6].(*global)
		if !ok || g.kind != gDType || !st.Untyped {
			return nil, fmt.Errorf("%w: _rebuild_tensor_v3 wants an UntypedStorage and a dtype, got %s and %s", ErrArgs, typeName(args[0]), typeName(args[6]))
		}
		t.DType, meta = g.dtype, 7
	}
	if n > meta {
		if err := checkMetadata(args[meta]); err != nil {
			return nil, err
		}
	}
	return t, t.validate(lim)
}

func checkMetadata(v any) error {
	d, ok := v.(*dict)
	if !ok {
		return fmt.Errorf("%w: tensor metadata is %s, want a dict", ErrArgs, typeName(v))
	}
	for i, k := range d.keys {
		if (k != "conj" && k != "neg") || d.vals[i] != false {
			return fmt.Errorf("%w: tensor metadata %v=%v (conjugate or negative views)", ErrUnsupported, k, d.vals[i])
		}
	}
	return nil
}

func intTuple(v any) ([]int64, bool) {
	t, ok := v.(tuple)
	if !ok {
		return nil, false
	}
	out := make([]int64, len(t))
	for i, x := range t {
		if out[i], ok = x.(int64); !ok {
			return nil, false
		}
	}
	return out, true
}

// validate checks the view against its storage with overflow-checked
// arithmetic: non-negative sizes, strides and offset, and every element
// inside the storage.
func (t *Tensor) validate(lim Limits) error {
	if len(t.Shape) > lim.MaxRank {
		return fmt.Errorf("%w: rank %d, limit %d", ErrLimit, len(t.Shape), lim.MaxRank)
	}
	if len(t.Shape) != len(t.Stride) {
		return fmt.Errorf("%w: %d sizes and %d strides", ErrArgs, len(t.Shape), len(t.Stride))
	}
	if t.Offset < 0 {
		return fmt.Errorf("%w: storage offset %d is negative", ErrOutOfBounds, t.Offset)
	}
	esz := int64(t.DType.Size())
	if t.Storage.Size%esz != 0 {
		return fmt.Errorf("%w: storage of %d bytes is not a whole number of %s elements", ErrRecordSize, t.Storage.Size, t.DType)
	}
	numel, last, err := extent(t.Shape, t.Stride, t.Offset)
	if err != nil {
		return err
	}
	bytes, err := mul(numel, esz)
	if err != nil {
		return err
	}
	if bytes > t.Storage.Size && bytes > lim.MaxViewBytes {
		return fmt.Errorf("%w: view %v stride %v is %d bytes from a storage of %d (overlapping strides), limit %d", ErrLimit, t.Shape, t.Stride, bytes, t.Storage.Size, lim.MaxViewBytes)
	}
	have := t.Storage.Size / esz
	if (numel > 0 && last >= have) || (numel == 0 && t.Offset > have) {
		return fmt.Errorf("%w: view %v stride %v offset %d reaches element %d of a storage of %d", ErrOutOfBounds, t.Shape, t.Stride, t.Offset, last, have)
	}
	return nil
}

// extent returns the element count of a view and the index of its last
// element, refusing negative values and overflow.
func extent(shape, stride []int64, off int64) (numel, last int64, err error) {
	numel, last = 1, off
	for i := range shape {
		if shape[i] < 0 || stride[i] < 0 {
			return 0, 0, fmt.Errorf("%w: dimension %d has size %d and stride %d: negative values are refused", ErrOutOfBounds, i, shape[i], stride[i])
		}
		if numel, err = mul(numel, shape[i]); err != nil {
			return 0, 0, err
		}
		if shape[i] > 0 {
			span, err := mul(shape[i]-1, stride[i])
			if err != nil {
				return 0, 0, err
			}
			if last, err = add(last, span); err != nil {
				return 0, 0, err
			}
		}
	}
	return numel, last, nil
}

func mul(a, b int64) (int64, error) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if a < 0 || b < 0 || hi != 0 || lo > 1<<62 {
		return 0, fmt.Errorf("%w: %d x %d", ErrOverflow, a, b)
	}
	return int64(lo), nil
}

func add(a, b int64) (int64, error) {
	if a < 0 || b < 0 || a > 1<<62-b {
		return 0, fmt.Errorf("%w: %d + %d", ErrOverflow, a, b)
	}
	return a + b, nil
}
