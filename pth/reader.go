package pth

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Format is the container format of a checkpoint.
type Format string

// The container formats a Reader accepts.
const (
	FormatZip    Format = "zip"    // torch.save since torch 1.6
	FormatLegacy Format = "legacy" // _use_new_zipfile_serialization=False
)

// Reader gives access to the tensors of a torch.save checkpoint. Its
// fields describe the file; tensor data is read on demand with
// Tensor.ReadAt.
type Reader struct {
	Format    Format
	Prefix    string    // zip archive prefix (the directory all records live in)
	Version   int       // zip "version" record
	ByteOrder string    // "little"
	Records   []*Record // zip records in archive order
	// Container is "state_dict" when the tensors were found under that key
	// of a checkpoint dictionary, else empty.
	Container string
	Tensors   []*Tensor  // in state-dict order
	Storages  []*Storage // in first-use order
	// Skipped names the entries of the dictionary that are not tensors.
	Skipped    []string
	PickleSize int64
	size       int64
	src        io.ReaderAt
	lim        Limits
	byName     map[string]*Record
}

// ReadCloser is a Reader over a file it closes.
type ReadCloser struct {
	f *os.File
	Reader
}

// Close closes the file.
func (rc *ReadCloser) Close() error { return rc.f.Close() }

// OpenReader opens the named checkpoint with DefaultLimits.
func OpenReader(name string) (*ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := NewReader(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &ReadCloser{f: f, Reader: *r}, nil
}

// NewReader reads the checkpoint held in the first size bytes of r with
// DefaultLimits. It reads only the directory and the pickle, never the
// tensor data.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	return NewReaderLimits(r, size, DefaultLimits)
}

// internalError begins the message of a panic recovered by NewReaderLimits:
// a bug, which the fuzz targets look for.
const internalError = "internal error on malformed input"

// NewReaderLimits is NewReader with explicit limits. Whatever the input,
// it returns an error rather than panicking.
func NewReaderLimits(r io.ReaderAt, size int64, lim Limits) (rd *Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			rd, err = nil, formatErr(-1, ErrFormat, "%s: %v", internalError, p)
		}
	}()
	f, err := detect(r, size)
	if err != nil {
		return nil, err
	}
	rd = &Reader{Format: f, size: size, ByteOrder: "little", src: r, lim: lim}
	if f == FormatLegacy {
		err = rd.readLegacy(r, lim, legacyWindow)
	} else {
		err = rd.readZip(r, lim)
	}
	if err != nil {
		return nil, err
	}
	return rd, nil
}

var legacyMagic = []byte{0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e}

// detect tells the container format from the first bytes.
func detect(r io.ReaderAt, size int64) (Format, error) {
	head := make([]byte, min(size, 512))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return "", formatErr(0, err, "read header")
	}
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return FormatZip, nil
	case bytes.HasPrefix(head, []byte("PYTORCH1")):
		return "", formatErr(0, ErrFormat, "preview-release archive (PYTORCH1): load it with that torch and re-save with torch.save")
	case len(head) >= 15 && head[0] == opProto && head[1] >= 2 && bytes.Equal(head[2:15], legacyMagic):
		return FormatLegacy, nil
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return "", formatErr(0, ErrFormat, "tar checkpoint from torch before 0.4 refused: load it with an old torch and re-save with torch.save")
	case size < 4:
		return "", formatErr(0, ErrFormat, "file of %d bytes", size)
	}
	return "", formatErr(0, ErrFormat, "unknown format (starts with % x): want a file written by torch.save", head[:min(8, len(head))])
}

func (rd *Reader) readZip(r io.ReaderAt, lim Limits) error {
	ix, err := indexZip(r, rd.size, lim)
	if err != nil {
		return err
	}
	rd.Prefix, rd.Records, rd.byName = ix.prefix, ix.records, ix.byName
	if err := ix.checkTorch(r, rd, lim); err != nil {
		return err
	}
	pkl, err := readRecord(r, ix.byName["data.pkl"], lim.MaxPickle)
	if err != nil {
		return err
	}
	rd.PickleSize = int64(len(pkl))
	loader := &zipStorages{ix: ix, src: r, seen: map[string]*Storage{}}
	m := &vm{buf: pkl, lim: lim, persistentLoad: loader.load}
	v, n, err := m.run()
	if err != nil {
		return err
	}
	if n != len(pkl) {
		return &PickleError{Offset: int64(n), Op: opStop, Msg: fmt.Sprintf("%d bytes after STOP", len(pkl)-n), Err: ErrPickle}
	}
	rd.Storages = loader.order
	return rd.collect(v)
}

// checkTorch refuses TorchScript archives and checks the metadata records.
func (ix *zipIndex) checkTorch(r io.ReaderAt, rd *Reader, lim Limits) error {
	for rel := range ix.byName {
		if rel == "constants.pkl" || strings.HasPrefix(rel, "code/") {
			return recordErr(ix.prefix+"/"+rel, ErrTorchScript, "found")
		}
	}
	if ix.byName["data.pkl"] == nil {
		return recordErr(ix.prefix+"/data.pkl", ErrMissingRecord, "not in the archive")
	}
	vrec := ix.byName["version"]
	if vrec == nil {
		vrec = ix.byName[".data/version"]
	}
	if vrec == nil {
		return recordErr(ix.prefix+"/version", ErrVersion, "missing")
	}
	b, err := readRecord(r, vrec, lim.MaxSmall)
	if err != nil {
		return err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < 1 || v > 10 {
		return recordErr(vrec.Name, ErrVersion, "%q: want a number from 1 to 10", b)
	}
	rd.Version = v
	if rec := ix.byName["byteorder"]; rec != nil {
		b, err := readRecord(r, rec, lim.MaxSmall)
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(string(b)); s != "little" {
			return recordErr(rec.Name, ErrByteOrder, "want little, got %q: re-save the checkpoint on a little-endian machine", s)
		}
	}
	return nil
}

// zipStorages resolves persistent ids to the archive's data records.
type zipStorages struct {
	ix    *zipIndex
	src   io.ReaderAt
	seen  map[string]*Storage
	order []*Storage
}

func (z *zipStorages) load(pid tuple) (any, error) {
	s, err := parsePID(pid, 5)
	if err != nil {
		return nil, err
	}
	if err := checkKey(s.Key); err != nil {
		return nil, err
	}
	if old := z.seen[s.Key]; old != nil {
		return old, sameStorage(old, s)
	}
	rec := z.ix.byName["data/"+s.Key]
	if rec == nil {
		return nil, fmt.Errorf("%w: %s/data/%s", ErrMissingRecord, z.ix.prefix, s.Key)
	}
	if rec.Method != Store {
		return nil, fmt.Errorf("%w: %s is deflated; tensor data must be stored uncompressed to be read in place: re-save with torch.save", ErrCompressed, rec.Name)
	}
	if rec.Size != s.Size {
		return nil, fmt.Errorf("%w: %s: %d %s elements need %d bytes, record has %d (want %d, got %d)", ErrRecordSize, rec.Name, s.Numel, s.DType, s.Size, rec.Size, s.Size, rec.Size)
	}
	s.Offset, s.Record, s.src = rec.DataOffset, rec, z.src
	z.seen[s.Key] = s
	z.order = append(z.order, s)
	return s, nil
}

// parsePID checks ('storage', storage_type, key, location, numel[, view]).
func parsePID(pid tuple, n int) (*Storage, error) {
	if len(pid) != n {
		return nil, fmt.Errorf("%w: tuple of %d items, want %d", ErrPersID, len(pid), n)
	}
	if pid[0] != "storage" {
		return nil, fmt.Errorf("%w: kind %v, want 'storage'", ErrPersID, pid[0])
	}
	g, ok := pid[1].(*global)
	key, okKey := pid[2].(string)
	loc, okLoc := pid[3].(string)
	numel, okNum := pid[4].(int64)
	if !ok || g.kind != gStorage || !okKey || !okLoc || !okNum || len(loc) > 64 {
		return nil, fmt.Errorf("%w: want ('storage', storage type, str, str, int), got (%s, %s, %s, %s)", ErrPersID,
			typeName(pid[1]), typeName(pid[2]), typeName(pid[3]), typeName(pid[4]))
	}
	if numel < 0 {
		return nil, fmt.Errorf("%w: storage %q has %d elements", ErrRecordSize, key, numel)
	}
	size, err := mul(numel, int64(g.dtype.Size()))
	if err != nil {
		return nil, err
	}
	return &Storage{Key: key, DType: g.dtype, Untyped: g.name == "UntypedStorage", Numel: numel, Size: size}, nil
}

// checkKey accepts the decimal keys torch writes.
func checkKey(k string) error {
	if k == "" || len(k) > 20 {
		return fmt.Errorf("%w: %q", ErrKey, k)
	}
	for _, c := range []byte(k) {
		if c < '0' || c > '9' {
			return fmt.Errorf("%w: %q is not a decimal record number", ErrKey, k)
		}
	}
	return nil
}

func sameStorage(old, s *Storage) error {
	if old.DType != s.DType || old.Numel != s.Numel || old.Untyped != s.Untyped {
		return fmt.Errorf("%w: key %q as %d %s, then as %d %s", ErrStorageConflict, s.Key, old.Numel, old.DType, s.Numel, s.DType)
	}
	return nil
}

// collect finds the state dict in the unpickled value and lists its tensors.
func (rd *Reader) collect(v any) error {
	top, ok := v.(*dict)
	if !ok {
		return formatErr(-1, ErrNotStateDict, "the checkpoint holds a %s, want a dict of tensors", typeName(v))
	}
	if sd, ok := top.get("state_dict"); ok {
		if d, ok := sd.(*dict); ok {
			top, rd.Container = d, "state_dict"
		}
	}
	for i, k := range top.keys {
		name, _ := k.(string)
		t, isT := top.vals[i].(*Tensor)
		switch {
		case isT && name == "" && k != "":
			return formatErr(-1, ErrKeyType, "state dict key %v is %s: want str", k, typeName(k))
		case isT:
			c := *t
			c.Name = name
			rd.Tensors = append(rd.Tensors, &c)
		default:
			rd.Skipped = append(rd.Skipped, fmt.Sprint(k))
		}
	}
	if len(rd.Tensors) == 0 {
		return formatErr(-1, ErrNotStateDict, "no tensors in the checkpoint's dict")
	}
	return nil
}

// StripPrefix returns the tensors as the codec's own loader sees them when
// a training checkpoint nests the model under prefix (e.g. "generator."):
// when any name starts with prefix, only those tensors are kept, renamed
// without it; otherwise ts is returned as is. The tensors are copies.
func StripPrefix(ts []*Tensor, prefix string) []*Tensor {
	if prefix == "" {
		return ts
	}
	var out []*Tensor
	for _, t := range ts {
		if rest, ok := strings.CutPrefix(t.Name, prefix); ok {
			c := *t
			c.Name = rest
			out = append(out, &c)
		}
	}
	if out == nil {
		return ts
	}
	return out
}
