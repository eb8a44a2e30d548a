package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"sort"
)

// Tensor is one tensor of a file: its header entry and where its bytes lie.
type Tensor struct {
	Name   string
	DType  DType
	Shape  []int64
	Offset int64 // absolute byte offset of the data in the file
	Size   int64 // data bytes

	r io.ReaderAt
}

// NumElements returns the product of the shape (1 for a scalar).
func (t *Tensor) NumElements() int64 { return numElements(t.Shape) }

// Open returns a reader of the tensor's bytes.
func (t *Tensor) Open() *io.SectionReader { return io.NewSectionReader(t.r, t.Offset, t.Size) }

// ReadAt reads len(p) bytes of the tensor's data starting at off within it.
func (t *Tensor) ReadAt(p []byte, off int64) (int, error) { return t.Open().ReadAt(p, off) }

// Bytes reads the whole tensor's data into a new slice.
func (t *Tensor) Bytes() ([]byte, error) {
	buf := make([]byte, t.Size)
	if _, err := io.ReadFull(t.Open(), buf); err != nil {
		return nil, fmt.Errorf("safetensors: read tensor %q: %w", t.Name, err)
	}
	return buf, nil
}

// Slice returns a view of the size bytes at off within t's data as a tensor
// called name of t's dtype and the given shape; size must equal the shape's
// byte size. It is how a fused tensor (say [experts, rows, cols]) is read one
// part at a time.
func (t *Tensor) Slice(name string, off, size int64, shape []int64) (*Tensor, error) {
	want, ok := byteSize(t.DType, shape)
	switch {
	case !ok || want != size:
		return nil, fmt.Errorf("safetensors: slice %q of %q: shape %v needs %d bytes, got %d", name, t.Name, shape, want, size)
	case off < 0 || size < 0 || off > t.Size-size:
		return nil, fmt.Errorf("safetensors: slice %q of %q: bytes [%d, %d) outside the tensor's %d", name, t.Name, off, off+size, t.Size)
	}
	return &Tensor{Name: name, DType: t.DType, Shape: shape, Offset: t.Offset + off, Size: size, r: t.r}, nil
}

// Reader gives access to the tensors of one safetensors file.
type Reader struct {
	Metadata   map[string]string // the header's __metadata__, nil if absent
	Tensors    []*Tensor         // in data order (ascending Offset)
	HeaderSize int64             // bytes of the JSON header, padding included
	byName     map[string]*Tensor
}

// Tensor returns the tensor called name, or an error matching ErrNotFound.
func (r *Reader) Tensor(name string) (*Tensor, error) {
	if t, ok := r.byName[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
}

// DataOffset returns the file offset of the first data byte.
func (r *Reader) DataOffset() int64 { return 8 + r.HeaderSize }

// NewReader reads and validates the header of the safetensors data in r,
// which is size bytes long. Tensor data is read only on demand.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	if size < 8 {
		return nil, formatErr("", 0, "file is %d bytes, shorter than the 8-byte header length", size)
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("safetensors: read header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	switch {
	case n > MaxHeaderSize:
		return nil, formatErr("", 0, "header length %d exceeds the %d-byte limit", n, MaxHeaderSize)
	case int64(n) > size-8:
		return nil, formatErr("", 0, "header length %d runs past the end of the %d-byte file", n, size)
	case n < 2:
		return nil, formatErr("", 0, "header length %d is too short for a JSON object", n)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, fmt.Errorf("safetensors: read header: %w", err)
	}
	rd, err := parseHeader(hdr, size-8-int64(n))
	if err != nil {
		return nil, err
	}
	rd.HeaderSize = int64(n)
	for _, t := range rd.Tensors {
		t.Offset += rd.DataOffset()
		t.r = r
	}
	return rd, nil
}

type rawEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// parseHeader parses the JSON header; tensor offsets are left relative to
// the data area, which is dataLen bytes long.
func parseHeader(hdr []byte, dataLen int64) (*Reader, error) {
	if hdr[0] != '{' {
		return nil, formatErr("", 8, "header does not start with '{' (got %q)", hdr[0])
	}
	entries, meta, err := decodeHeaderJSON(hdr)
	if err != nil {
		return nil, err
	}
	rd := &Reader{Metadata: meta, byName: make(map[string]*Tensor, len(entries))}
	for _, e := range entries {
		rd.Tensors = append(rd.Tensors, e)
		rd.byName[e.Name] = e
	}
	sort.SliceStable(rd.Tensors, func(i, j int) bool { return rd.Tensors[i].Offset < rd.Tensors[j].Offset })
	return rd, checkTiling(rd.Tensors, dataLen)
}

// decodeHeaderJSON walks the header object key by key, so duplicate names
// are caught and every entry is validated on its own.
func decodeHeaderJSON(hdr []byte) ([]*Tensor, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, nil, formatErr("", 8, "header is not JSON: %v", err)
	}
	var out []*Tensor
	var meta map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, formatErr("", 8+dec.InputOffset(), "header is not JSON: %v", err)
		}
		name := tok.(string)
		if seen[name] {
			return nil, nil, formatErr(name, -1, "name appears twice in the header")
		}
		seen[name] = true
		if name == "__metadata__" {
			if err := dec.Decode(&meta); err != nil {
				return nil, nil, formatErr("", 8+dec.InputOffset(), "__metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		t, err := decodeEntry(dec, name)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, t)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, formatErr("", 8+dec.InputOffset(), "header is not JSON: %v", err)
	}
	if rest := bytes.TrimLeft(hdr[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, nil, formatErr("", 8+dec.InputOffset(), "unexpected bytes after the header object")
	}
	return out, meta, nil
}

func decodeEntry(dec *json.Decoder, name string) (*Tensor, error) {
	var e rawEntry
	if err := dec.Decode(&e); err != nil {
		return nil, formatErr(name, -1, "bad header entry: %v", err)
	}
	if !e.DType.Valid() {
		return nil, formatErr(name, -1, "unsupported dtype %q (want one of F64 F32 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 I16 I8 U8 BOOL)", e.DType)
	}
	if e.Shape == nil {
		return nil, formatErr(name, -1, "missing shape")
	}
	if len(e.DataOffsets) != 2 || e.DataOffsets[0] > e.DataOffsets[1] || e.DataOffsets[1] > math.MaxInt64 {
		return nil, formatErr(name, -1, "data_offsets %v: want [begin, end] with begin <= end", e.DataOffsets)
	}
	size, ok := byteSize(e.DType, e.Shape)
	if !ok {
		return nil, formatErr(name, -1, "shape %v is negative or too large", e.Shape)
	}
	if got := int64(e.DataOffsets[1] - e.DataOffsets[0]); got != size {
		return nil, formatErr(name, -1, "%s%v needs %d bytes, want %d, got %d from data_offsets", e.DType, e.Shape, size, size, got)
	}
	return &Tensor{Name: name, DType: e.DType, Shape: e.Shape, Offset: int64(e.DataOffsets[0]), Size: size}, nil
}

// checkTiling checks that the tensors, sorted by offset, cover [0, dataLen)
// with no gap and no overlap.
func checkTiling(ts []*Tensor, dataLen int64) error {
	var at int64
	for _, t := range ts {
		if t.Offset != at {
			what := "gap"
			if t.Offset < at {
				what = "overlap"
			}
			return formatErr(t.Name, -1, "%s in the data area: want data_offsets starting at %d, got %d", what, at, t.Offset)
		}
		at += t.Size
	}
	if at != dataLen {
		return formatErr("", -1, "tensors cover %d data bytes, but the file holds %d after its header", at, dataLen)
	}
	return nil
}

// byteSize returns the number of data bytes of a tensor, reporting false on
// a negative dimension or an overflow.
func byteSize(d DType, shape []int64) (int64, bool) {
	n := uint64(d.Size())
	for _, s := range shape {
		if s < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(n, uint64(s))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		n = lo
	}
	return int64(n), true
}

func numElements(shape []int64) int64 {
	n := int64(1)
	for _, s := range shape {
		n *= s
	}
	return n
}

// ReadCloser is a Reader over an open file, which Close closes.
type ReadCloser struct {
	Reader
	f *os.File
}

// Close closes the underlying file.
func (rc *ReadCloser) Close() error { return rc.f.Close() }

// OpenReader opens the safetensors file name and reads its header.
func OpenReader(name string) (*ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	r, err := NewReader(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, withFile(err, name)
	}
	return &ReadCloser{Reader: *r, f: f}, nil
}
