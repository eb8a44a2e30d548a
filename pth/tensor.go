package pth

import (
	"errors"
	"fmt"
	"io"
)

// Storage is one block of raw tensor bytes in the file: a zip record
// <prefix>/data/<key>, or a storage of a legacy file. Views share it.
type Storage struct {
	Key     string
	DType   DType // element type of the storage class; U8 when Untyped
	Untyped bool  // torch.storage.UntypedStorage (tensors carry their dtype)
	Numel   int64 // elements of DType, as the checkpoint declares
	Size    int64 // bytes
	Offset  int64 // file offset of the first byte
	Record  *Record
	src     io.ReaderAt
}

// Tensor is one named view of a storage.
type Tensor struct {
	Name         string
	DType        DType
	Shape        []int64
	Stride       []int64 // in elements
	Offset       int64   // storage offset, in elements
	RequiresGrad bool
	Storage      *Storage // nil for a folded weight
	fold         *fold
}

// maxGatherSpan bounds the storage bytes held at once to gather a
// non-contiguous view.
const maxGatherSpan = 4 << 20

// Numel returns the number of elements.
func (t *Tensor) Numel() int64 {
	n := int64(1)
	for _, s := range t.Shape {
		n *= s
	}
	return n
}

// Len returns the size in bytes of the tensor laid out contiguously.
func (t *Tensor) Len() int64 { return t.Numel() * int64(t.DType.Size()) }

// Contiguous reports whether the view is laid out in C order, so its bytes
// are one run of the storage. Dimensions of size 1 may have any stride.
func (t *Tensor) Contiguous() bool {
	want := int64(1)
	for i := len(t.Shape) - 1; i >= 0; i-- {
		if t.Shape[i] == 0 {
			return true
		}
		if t.Shape[i] != 1 && t.Stride[i] != want {
			return false
		}
		want *= t.Shape[i]
	}
	return true
}

// FileOffset returns the file offset of the first element of a contiguous
// tensor.
func (t *Tensor) FileOffset() int64 {
	return t.Storage.Offset + t.Offset*int64(t.DType.Size())
}

// ReadAt reads the tensor's bytes as if laid out contiguously in
// little-endian C order, starting at byte off. It reads the file with
// pread and never holds more than a bounded window in memory. It is safe
// for concurrent use.
func (t *Tensor) ReadAt(p []byte, off int64) (int, error) {
	size := t.Len()
	if off < 0 {
		return 0, fmt.Errorf("pth: tensor %q: negative offset %d", t.Name, off)
	}
	if off >= size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := len(p)
	if rest := size - off; int64(n) > rest {
		p = p[:rest]
	}
	var err error
	switch {
	case t.fold != nil:
		err = t.fold.readAt(p, off)
	case t.Contiguous():
		err = t.readRun(p, t.FileOffset()+off)
	default:
		err = t.gather(p, off)
	}
	if err != nil {
		return 0, err
	}
	if len(p) < n {
		return len(p), io.EOF
	}
	return len(p), nil
}

func (t *Tensor) readRun(p []byte, at int64) error {
	if _, err := t.Storage.src.ReadAt(p, at); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return tensorErr(t.Name, ErrTruncated, "read %d bytes at file offset %d (file changed or truncated?): %v", len(p), at, err)
	}
	return nil
}

// gather copies the elements covering p from a strided view: it reads the
// storage span those elements touch in windows of at most maxGatherSpan
// bytes and picks each window's elements.
func (t *Tensor) gather(p []byte, off int64) error {
	esz := int64(t.DType.Size())
	first, count := off/esz, (off+int64(len(p))+esz-1)/esz-off/esz
	lo, hi := t.span(first, count)
	tmp := make([]byte, count*esz)
	win := make([]byte, min((hi-lo+1)*esz, maxGatherSpan/esz*esz))
	step := int64(len(win)) / esz
	for start := lo; start <= hi; start += step {
		end := min(start+step, hi+1)
		w := win[:(end-start)*esz]
		if err := t.readRun(w, t.Storage.Offset+start*esz); err != nil {
			return err
		}
		t.walk(first, count, func(i, s int64) {
			if s >= start && s < end {
				copy(tmp[i*esz:(i+1)*esz], w[(s-start)*esz:])
			}
		})
	}
	copy(p, tmp[off-first*esz:])
	return nil
}

// span returns the least and greatest storage element of count logical
// elements from first.
func (t *Tensor) span(first, count int64) (lo, hi int64) {
	lo, hi = -1, -1
	t.walk(first, count, func(_, s int64) {
		if lo < 0 || s < lo {
			lo = s
		}
		hi = max(hi, s)
	})
	return lo, hi
}

// walk calls fn with the position (from 0) and storage index of count
// logical elements starting at first, in C order.
func (t *Tensor) walk(first, count int64, fn func(i, s int64)) {
	rank := len(t.Shape)
	idx := make([]int64, rank)
	rem := first
	for d := rank - 1; d >= 0; d-- {
		idx[d] = rem % t.Shape[d]
		rem /= t.Shape[d]
	}
	for i := int64(0); i < count; i++ {
		s := t.Offset
		for d := range rank {
			s += idx[d] * t.Stride[d]
		}
		fn(i, s)
		for d := rank - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < t.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// Open returns a reader of the tensor's contiguous bytes.
func (t *Tensor) Open() *io.SectionReader { return io.NewSectionReader(t, 0, t.Len()) }
