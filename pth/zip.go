package pth

import (
	"bytes"
	"cmp"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Zip compression methods.
const (
	Store   uint16 = 0 // stored, uncompressed: readable in place
	Deflate uint16 = 8 // deflated
)

const (
	sigLocal       = 0x04034b50
	sigCentral     = 0x02014b50
	sigEnd         = 0x06054b50
	sigEnd64       = 0x06064b50
	sigEnd64Locate = 0x07064b50
	endLen         = 22
	centralLen     = 46
	localLen       = 30
)

// Record is one entry of a torch zip archive.
type Record struct {
	Name           string // full name, prefix included
	HeaderOffset   int64  // offset of the local file header
	DataOffset     int64  // offset of the first data byte
	Method         uint16 // Store or Deflate
	CompressedSize int64
	Size           int64 // uncompressed size
	CRC32          uint32
}

// directory is the parsed end of a zip file.
type directory struct {
	offset, size, count int64
}

// findEnd locates the end-of-central-directory record (and its ZIP64 form).
func findEnd(r io.ReaderAt, size int64, lim Limits) (directory, error) {
	tail := min(size, 65535+endLen)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return directory{}, formatErr(size-tail, err, "read end of zip")
	}
	i := len(buf) - endLen
	for ; i >= 0; i-- {
		if binary.LittleEndian.Uint32(buf[i:]) == sigEnd {
			break
		}
	}
	if i < 0 {
		return directory{}, formatErr(-1, ErrFormat, "no zip end-of-central-directory record (file truncated?)")
	}
	end := size - tail + int64(i)
	e := buf[i:]
	d := directory{
		count:  int64(binary.LittleEndian.Uint16(e[10:])),
		size:   int64(binary.LittleEndian.Uint32(e[12:])),
		offset: int64(binary.LittleEndian.Uint32(e[16:])),
	}
	if d.count == 0xffff || d.size == 0xffffffff || d.offset == 0xffffffff {
		var err error
		if d, err = readEnd64(r, end); err != nil {
			return directory{}, err
		}
	}
	return d, checkDirectory(d, end, lim)
}

func readEnd64(r io.ReaderAt, end int64) (directory, error) {
	loc := make([]byte, 20)
	if end < 20 {
		return directory{}, formatErr(end, ErrTruncated, "no ZIP64 locator")
	}
	if _, err := r.ReadAt(loc, end-20); err != nil || binary.LittleEndian.Uint32(loc) != sigEnd64Locate {
		return directory{}, formatErr(end-20, ErrFormat, "bad ZIP64 end locator")
	}
	off := binary.LittleEndian.Uint64(loc[8:])
	if off > uint64(end) || uint64(end)-off < 56 {
		return directory{}, formatErr(end-20, ErrFormat, "ZIP64 end record offset %d outside the file", off)
	}
	rec := make([]byte, 56)
	if _, err := r.ReadAt(rec, int64(off)); err != nil || binary.LittleEndian.Uint32(rec) != sigEnd64 {
		return directory{}, formatErr(int64(off), ErrFormat, "bad ZIP64 end record")
	}
	cnt, sz, dof := binary.LittleEndian.Uint64(rec[32:]), binary.LittleEndian.Uint64(rec[40:]), binary.LittleEndian.Uint64(rec[48:])
	if cnt > 1<<40 || sz > 1<<40 || dof > 1<<62 {
		return directory{}, formatErr(int64(off), ErrFormat, "ZIP64 end record sizes out of range")
	}
	return directory{count: int64(cnt), size: int64(sz), offset: int64(dof)}, nil
}

func checkDirectory(d directory, end int64, lim Limits) error {
	switch {
	case d.count > int64(lim.MaxRecords):
		return formatErr(end, ErrLimit, "zip declares %d entries, limit %d", d.count, lim.MaxRecords)
	case d.size > lim.MaxDirectory:
		return formatErr(end, ErrLimit, "zip central directory is %d bytes, limit %d", d.size, lim.MaxDirectory)
	case d.offset+d.size > end:
		return formatErr(end, ErrTruncated, "central directory [%d, %d) runs past its end record at %d", d.offset, d.offset+d.size, end)
	case d.count*centralLen > d.size:
		return formatErr(end, ErrFormat, "central directory of %d bytes cannot hold %d entries", d.size, d.count)
	}
	return nil
}

// readDirectory parses the central directory into records (without their
// local headers).
func readDirectory(r io.ReaderAt, d directory, lim Limits) ([]*Record, error) {
	buf := make([]byte, d.size)
	if _, err := r.ReadAt(buf, d.offset); err != nil {
		return nil, formatErr(d.offset, ErrTruncated, "read central directory: %v", err)
	}
	recs := make([]*Record, 0, d.count)
	p := 0
	for i := int64(0); i < d.count; i++ {
		rec, n, err := parseCentral(buf[p:], lim)
		if err != nil {
			return nil, formatErr(d.offset+int64(p), err, "central directory entry %d", i)
		}
		recs = append(recs, rec)
		p += n
	}
	return recs, nil
}

func parseCentral(b []byte, lim Limits) (*Record, int, error) {
	if len(b) < centralLen || binary.LittleEndian.Uint32(b) != sigCentral {
		return nil, 0, fmt.Errorf("%w: bad signature", ErrFormat)
	}
	le := binary.LittleEndian
	flags := le.Uint16(b[8:])
	nameLen, extraLen, commentLen := int(le.Uint16(b[28:])), int(le.Uint16(b[30:])), int(le.Uint16(b[32:]))
	n := centralLen + nameLen + extraLen + commentLen
	if n > len(b) {
		return nil, 0, fmt.Errorf("%w: entry runs past the directory", ErrTruncated)
	}
	if nameLen > lim.MaxName {
		return nil, 0, fmt.Errorf("%w: name of %d bytes", ErrLimit, nameLen)
	}
	if flags&1 != 0 {
		return nil, 0, fmt.Errorf("%w: encrypted entry", ErrUnsupported)
	}
	rec := &Record{
		Name:           string(b[centralLen : centralLen+nameLen]),
		Method:         le.Uint16(b[10:]),
		CRC32:          le.Uint32(b[16:]),
		CompressedSize: int64(le.Uint32(b[20:])),
		Size:           int64(le.Uint32(b[24:])),
		HeaderOffset:   int64(le.Uint32(b[42:])),
	}
	if err := applyZip64(rec, b[centralLen+nameLen:centralLen+nameLen+extraLen]); err != nil {
		return nil, 0, err
	}
	return rec, n, nil
}

// applyZip64 replaces the 32-bit fields that are saturated by the values of
// the ZIP64 extra field, in the order the format defines.
func applyZip64(rec *Record, extra []byte) error {
	for len(extra) >= 4 {
		id, sz := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		if 4+sz > len(extra) {
			return fmt.Errorf("%w: extra field runs past its entry", ErrFormat)
		}
		if id == 0x0001 {
			f := extra[4 : 4+sz]
			for _, p := range []*int64{&rec.Size, &rec.CompressedSize, &rec.HeaderOffset} {
				if *p != 0xffffffff {
					continue
				}
				if len(f) < 8 {
					return fmt.Errorf("%w: short ZIP64 extra field", ErrFormat)
				}
				v := binary.LittleEndian.Uint64(f)
				if v > 1<<62 {
					return fmt.Errorf("%w: ZIP64 size %d out of range", ErrFormat, v)
				}
				*p, f = int64(v), f[8:]
			}
		}
		extra = extra[4+sz:]
	}
	return nil
}

// readLocal reads rec's local header, checks it against the central entry
// and sets DataOffset.
func readLocal(r io.ReaderAt, rec *Record, limit int64) error {
	h := make([]byte, localLen+len(rec.Name))
	if rec.HeaderOffset+int64(len(h)) > limit {
		return recordErr(rec.Name, ErrTruncated, "local header at %d past the central directory at %d", rec.HeaderOffset, limit)
	}
	if _, err := r.ReadAt(h, rec.HeaderOffset); err != nil || binary.LittleEndian.Uint32(h) != sigLocal {
		return recordErr(rec.Name, ErrFormat, "no local header at offset %d", rec.HeaderOffset)
	}
	nameLen, extraLen := int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
	if m := binary.LittleEndian.Uint16(h[8:]); m != rec.Method {
		return recordErr(rec.Name, ErrFormat, "local header at %d: method want %d, got %d", rec.HeaderOffset, rec.Method, m)
	}
	if name := h[localLen:]; nameLen != int64(len(rec.Name)) || string(name) != rec.Name {
		return recordErr(rec.Name, ErrFormat, "local header at %d names %q", rec.HeaderOffset, name[:min(int64(len(name)), nameLen)])
	}
	rec.DataOffset = rec.HeaderOffset + localLen + nameLen + extraLen
	if rec.DataOffset+rec.CompressedSize > limit {
		return recordErr(rec.Name, ErrTruncated, "data [%d, %d) runs past the central directory at %d", rec.DataOffset, rec.DataOffset+rec.CompressedSize, limit)
	}
	if rec.Method == Store && rec.CompressedSize != rec.Size {
		return recordErr(rec.Name, ErrFormat, "stored entry: compressed size %d, size %d", rec.CompressedSize, rec.Size)
	}
	if rec.Method != Store && rec.Method != Deflate {
		return recordErr(rec.Name, ErrUnsupported, "compression method %d", rec.Method)
	}
	return nil
}

// zipIndex is the validated record table of a torch zip archive.
type zipIndex struct {
	prefix  string
	records []*Record
	byName  map[string]*Record // by name relative to the prefix
}

// indexZip reads and validates the archive's directory and local headers.
func indexZip(r io.ReaderAt, size int64, lim Limits) (*zipIndex, error) {
	d, err := findEnd(r, size, lim)
	if err != nil {
		return nil, err
	}
	recs, err := readDirectory(r, d, lim)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, formatErr(-1, ErrFormat, "empty zip archive")
	}
	ix := &zipIndex{records: recs, byName: make(map[string]*Record, len(recs))}
	ix.prefix, _, _ = strings.Cut(recs[0].Name, "/")
	for _, rec := range recs {
		if err := ix.add(rec); err != nil {
			return nil, err
		}
		if err := readLocal(r, rec, d.offset); err != nil {
			return nil, err
		}
	}
	return ix, checkOverlap(recs)
}

func (ix *zipIndex) add(rec *Record) error {
	rel, err := entryName(ix.prefix, rec.Name)
	if err != nil {
		return err
	}
	if _, dup := ix.byName[rel]; dup {
		return recordErr(rec.Name, ErrDuplicate, "the archive holds this name twice")
	}
	ix.byName[rel] = rec
	return nil
}

// entryName applies the archive's one name rule: a name is a clean relative
// slash path (no empty, "." or ".." element, no leading slash, no
// backslash) whose first element is the prefix, followed by at least one
// more element. It returns the name relative to the prefix. The rule is
// applied to the name as written, so a name that would leave the prefix
// once cleaned ("archive/../../evil") is refused rather than cleaned.
func entryName(prefix, name string) (string, error) {
	if bad := badElement(name); bad != "" {
		return "", recordErr(name, ErrLayout, "entry name holds %s; a torch archive's names are plain relative paths", bad)
	}
	rel, ok := strings.CutPrefix(name, prefix+"/")
	if !ok || prefix == "" || rel == "" {
		return "", recordErr(name, ErrLayout, "entry outside the archive prefix %q", prefix+"/")
	}
	return rel, nil
}

// badElement says what makes name other than a clean relative slash path,
// or "" when it is one.
func badElement(name string) string {
	switch {
	case name == "":
		return "nothing"
	case strings.HasPrefix(name, "/"):
		return "a leading slash"
	case strings.ContainsRune(name, '\\'):
		return "a backslash"
	case strings.ContainsRune(name, 0):
		return "a NUL byte"
	}
	for _, el := range strings.Split(name, "/") {
		switch el {
		case "":
			return "an empty path element"
		case ".", "..":
			return fmt.Sprintf("a %q path element", el)
		}
	}
	return ""
}

// checkOverlap refuses two records whose header-and-data spans intersect.
func checkOverlap(recs []*Record) error {
	s := slices.Clone(recs)
	slices.SortFunc(s, func(a, b *Record) int { return cmp.Compare(a.HeaderOffset, b.HeaderOffset) })
	for i := 1; i < len(s); i++ {
		if end := s[i-1].DataOffset + s[i-1].CompressedSize; end > s[i].HeaderOffset {
			return recordErr(s[i].Name, ErrOverlap, "header at %d lies inside %q, which ends at %d", s[i].HeaderOffset, s[i-1].Name, end)
		}
	}
	return nil
}

// readRecord returns a whole record, inflating it when deflated, refusing
// one larger than max bytes.
func readRecord(r io.ReaderAt, rec *Record, max int64) ([]byte, error) {
	if rec.Size > max {
		return nil, recordErr(rec.Name, ErrLimit, "%d bytes, limit %d", rec.Size, max)
	}
	sr := io.NewSectionReader(r, rec.DataOffset, rec.CompressedSize)
	if rec.Method == Store {
		buf := make([]byte, rec.Size)
		if _, err := io.ReadFull(sr, buf); err != nil {
			return nil, recordErr(rec.Name, ErrTruncated, "read: %v", err)
		}
		return buf, nil
	}
	fr := flate.NewReader(sr)
	defer fr.Close()
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(fr, rec.Size+1))
	if err != nil {
		return nil, recordErr(rec.Name, ErrFormat, "inflate: %v", err)
	}
	if n != rec.Size {
		got := fmt.Sprint(n)
		if n > rec.Size {
			got = "more"
		}
		return nil, recordErr(rec.Name, ErrFormat, "inflated size: want %d, got %s", rec.Size, got)
	}
	return out.Bytes(), nil
}
