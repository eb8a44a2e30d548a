package pth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// legacyProtocol is the protocol_version torch's legacy format writes.
const legacyProtocol = 1001

// readLegacy reads the pre-1.6 format: pickles of the magic number, the
// protocol version, system information, the object and the sorted storage
// keys, then each storage as an int64 element count and its raw bytes.
// Each pickle is read in windows that start at window bytes (see
// legacyPickle).
func (rd *Reader) readLegacy(r io.ReaderAt, lim Limits, window int64) error {
	pos := int64(15)
	_, pos, err := legacyPickle(r, rd.size, pos, window, lim, nil)
	if err != nil {
		return err
	}
	info, pos, err := legacyPickle(r, rd.size, pos, window, lim, nil)
	if err != nil {
		return err
	}
	if err := checkSysInfo(info); err != nil {
		return err
	}
	ls := &legacyStorages{seen: map[string]*Storage{}}
	obj, pos, err := legacyPickle(r, rd.size, pos, window, lim, ls.load)
	if err != nil {
		return err
	}
	keys, pos, err := legacyPickle(r, rd.size, pos, window, lim, nil)
	if err != nil {
		return err
	}
	if err := ls.place(r, rd.size, pos, keys); err != nil {
		return err
	}
	rd.Storages = ls.order
	return rd.collect(obj)
}

// legacyPickle runs one pickle starting at file offset pos and returns its
// value and the offset after it. It reads window bytes first and doubles
// that (up to lim.MaxPickle) while the pickle runs past its end, so the
// small pickles of the header cost small reads; pl sees repeated storages
// again on a rerun and must accept them.
func legacyPickle(r io.ReaderAt, size, pos, window int64, lim Limits, pl func(tuple) (any, error)) (any, int64, error) {
	limit := min(size-pos, lim.MaxPickle)
	for n := min(limit, max(window, 1)); ; n = min(2*n, limit) {
		buf := make([]byte, n)
		if _, err := r.ReadAt(buf, pos); err != nil && err != io.EOF {
			return nil, 0, formatErr(pos, ErrTruncated, "read pickle: %v", err)
		}
		m := &vm{buf: buf, base: pos, lim: lim, persistentLoad: pl}
		v, used, err := m.run()
		if errors.Is(err, ErrTruncated) && n < limit {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		return v, pos + int64(used), nil
	}
}

// legacyWindow is the first read of each legacy pickle, in bytes.
const legacyWindow = 64 << 10

// checkSysInfo accepts the system-information pickle of a little-endian
// writer: {'protocol_version': 1001, 'little_endian': True, ...}.
func checkSysInfo(v any) error {
	d, ok := v.(*dict)
	if !ok {
		return formatErr(-1, ErrFormat, "legacy system information is %s, want a dict", typeName(v))
	}
	if pv, _ := d.get("protocol_version"); pv != int64(legacyProtocol) {
		return formatErr(-1, ErrUnsupported, "legacy protocol_version: want %d, got %v", legacyProtocol, pv)
	}
	if le, _ := d.get("little_endian"); le != true {
		return formatErr(-1, ErrByteOrder, "legacy checkpoint written on a big-endian machine: re-save it on a little-endian one")
	}
	return nil
}

// legacyStorages collects the storages of a legacy pickle; their offsets are
// known only once the key list has been read.
type legacyStorages struct {
	seen  map[string]*Storage
	order []*Storage
}

func (ls *legacyStorages) load(pid tuple) (any, error) {
	s, err := parsePID(pid, 6)
	if err != nil {
		return nil, err
	}
	if pid[5] != nil {
		return nil, fmt.Errorf("%w: legacy storage views (view_metadata %s)", ErrUnsupported, typeName(pid[5]))
	}
	if s.Key == "" || len(s.Key) > 64 {
		return nil, fmt.Errorf("%w: %q", ErrKey, s.Key)
	}
	if old := ls.seen[s.Key]; old != nil {
		return old, sameStorage(old, s)
	}
	s.Offset = -1
	ls.seen[s.Key] = s
	ls.order = append(ls.order, s)
	return s, nil
}

// place walks the storage section: for each key, an int64 element count
// that must match the pickle's, then the bytes.
func (ls *legacyStorages) place(r io.ReaderAt, size, pos int64, keys any) error {
	l, ok := keys.(*list)
	if !ok || len(l.items) != len(ls.seen) {
		return formatErr(pos, ErrFormat, "legacy key list is %s of wrong length: want %d keys", typeName(keys), len(ls.seen))
	}
	var hdr [8]byte
	for _, k := range l.items {
		key, _ := k.(string)
		s := ls.seen[key]
		if s == nil || s.Offset >= 0 {
			return formatErr(pos, ErrKey, "legacy key list names %v, unknown or repeated", k)
		}
		if _, err := r.ReadAt(hdr[:], pos); err != nil {
			return formatErr(pos, ErrTruncated, "storage %q header: %v", key, err)
		}
		if n := int64(binary.LittleEndian.Uint64(hdr[:])); n != s.Numel {
			return formatErr(pos, ErrRecordSize, "storage %q: want %d elements, got %d", key, s.Numel, n)
		}
		s.Offset, s.src = pos+8, r
		if pos = s.Offset + s.Size; pos > size || pos < 0 {
			return formatErr(s.Offset, ErrTruncated, "storage %q of %d bytes runs past the end of the file (%d bytes)", key, s.Size, size)
		}
	}
	return nil
}
