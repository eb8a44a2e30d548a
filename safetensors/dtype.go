package safetensors

// DType is a safetensors element type, spelled as in the header.
type DType string

// The element types this package reads and writes.
const (
	F64    DType = "F64"
	F32    DType = "F32"
	F16    DType = "F16"
	BF16   DType = "BF16"
	F8E4M3 DType = "F8_E4M3"
	F8E5M2 DType = "F8_E5M2"
	I64    DType = "I64"
	I32    DType = "I32"
	I16    DType = "I16"
	I8     DType = "I8"
	U8     DType = "U8"
	Bool   DType = "BOOL"
)

var dtypeSizes = map[DType]int{
	F64: 8, F32: 4, F16: 2, BF16: 2, F8E4M3: 1, F8E5M2: 1,
	I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, Bool: 1,
}

// Size returns the number of bytes of one element, or 0 for an unknown dtype.
func (d DType) Size() int { return dtypeSizes[d] }

// Valid reports whether d is one of the dtypes this package supports.
func (d DType) Valid() bool { return d.Size() > 0 }
