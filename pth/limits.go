package pth

// Limits bound what a Reader accepts from a file before it refuses it. The
// defaults fit a 2 GB codec checkpoint with a wide margin; a file beyond any
// limit is refused with an error wrapping ErrLimit.
type Limits struct {
	MaxRecords   int   // entries in the zip central directory
	MaxDirectory int64 // bytes of the zip central directory
	MaxName      int   // bytes of one entry name
	MaxPickle    int64 // bytes of the state-dict pickle (data.pkl)
	MaxSmall     int64 // bytes of a metadata record (version, byteorder)
	MaxOps       int   // opcodes executed
	MaxStack     int   // values on the pickle stack
	MaxMarks     int   // nesting of MARK
	MaxMemo      int   // memo entries
	MaxString    int   // bytes of one string
	MaxItems     int   // items in one tuple, list or dict
	MaxRank      int   // dimensions of one tensor
	MaxTensors   int   // tensors in the state dict
	// MaxViewBytes bounds a view whose contiguous size exceeds its storage's
	// (a broadcast or other overlapping strides): written out, it would
	// grow without bound from a few stored bytes.
	MaxViewBytes int64
}

// DefaultLimits are the limits NewReader uses.
var DefaultLimits = Limits{
	MaxRecords:   1 << 18,
	MaxDirectory: 64 << 20,
	MaxName:      4096,
	MaxPickle:    16 << 20,
	MaxSmall:     4096,
	MaxOps:       1 << 20,
	MaxStack:     1 << 20,
	MaxMarks:     1024,
	MaxMemo:      1 << 20,
	MaxString:    1 << 20,
	MaxItems:     1 << 20,
	MaxRank:      16,
	MaxTensors:   100_000,
	MaxViewBytes: 256 << 20,
}
