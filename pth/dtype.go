package pth

import "fmt"

// DType is a tensor element type. Its String form is the safetensors name.
type DType uint8

// The element types a checkpoint can hold.
const (
	Invalid DType = iota
	F64
	F32
	F16
	BF16
	F8E4M3
	F8E5M2
	I64
	I32
	I16
	I8
	U64
	U32
	U16
	U8
	Bool
)

var dtypeInfo = [...]struct {
	name  string
	torch string
	size  int
}{
	Invalid: {"invalid", "", 0},
	F64:     {"F64", "float64", 8},
	F32:     {"F32", "float32", 4},
	F16:     {"F16", "float16", 2},
	BF16:    {"BF16", "bfloat16", 2},
	F8E4M3:  {"F8_E4M3", "float8_e4m3fn", 1},
	F8E5M2:  {"F8_E5M2", "float8_e5m2", 1},
	I64:     {"I64", "int64", 8},
	I32:     {"I32", "int32", 4},
	I16:     {"I16", "int16", 2},
	I8:      {"I8", "int8", 1},
	U64:     {"U64", "uint64", 8},
	U32:     {"U32", "uint32", 4},
	U16:     {"U16", "uint16", 2},
	U8:      {"U8", "uint8", 1},
	Bool:    {"BOOL", "bool", 1},
}

// String returns the safetensors name of d ("F32", "BF16", "F8_E4M3", ...).
func (d DType) String() string {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].name
	}
	return fmt.Sprintf("DType(%d)", d)
}

// TorchName returns torch's name for d ("float32", "bfloat16", ...).
func (d DType) TorchName() string {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].torch
	}
	return ""
}

// Size returns the size of one element in bytes.
func (d DType) Size() int {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].size
	}
	return 0
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	switch d {
	case F64, F32, F16, BF16, F8E4M3, F8E5M2:
		return true
	}
	return false
}

// storageDTypes maps the legacy typed storage classes (module torch) to the
// element type they hold.
var storageDTypes = map[string]DType{
	"DoubleStorage":   F64,
	"FloatStorage":    F32,
	"HalfStorage":     F16,
	"BFloat16Storage": BF16,
	"LongStorage":     I64,
	"IntStorage":      I32,
	"ShortStorage":    I16,
	"CharStorage":     I8,
	"ByteStorage":     U8,
	"BoolStorage":     Bool,
}

// dtypeGlobals maps torch dtype globals (module torch), which appear as the
// dtype argument of _rebuild_tensor_v3.
var dtypeGlobals = map[string]DType{
	"float64": F64, "float32": F32, "float16": F16, "bfloat16": BF16,
	"float8_e4m3fn": F8E4M3, "float8_e5m2": F8E5M2,
	"int64": I64, "int32": I32, "int16": I16, "int8": I8,
	"uint64": U64, "uint32": U32, "uint16": U16, "uint8": U8, "bool": Bool,
}
