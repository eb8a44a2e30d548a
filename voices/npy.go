package voices

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// maxNPYHeader bounds the header of a .npy file.
const maxNPYHeader = 1 << 16

// npyHeader is what drama reads from a .npy header.
type npyHeader struct {
	descr   string
	fortran bool
	shape   []int
}

// npyItemSizes are the dtypes accepted for code arrays and their sizes.
var npyItemSizes = map[string]int{"<i8": 8, "<i4": 4, "<i2": 2, "<u2": 2}

// ReadNPY reads fish-speech's code array: a .npy file holding a (10, T)
// array of little-endian int64, int32, int16 or uint16, in C or Fortran
// order, with 1 <= T <= MaxFrames. Errors wrap ErrNPY. The codes' ranges
// are not checked here; Validate does that.
func ReadNPY(r io.Reader) (Codes, error) {
	h, err := readNPYHeader(r)
	if err != nil {
		return nil, err
	}
	size, ok := npyItemSizes[h.descr]
	if !ok {
		return nil, fmt.Errorf("%w: dtype %q: want <i8, <i4, <i2 or <u2 (little-endian integers)", ErrNPY, h.descr)
	}
	if len(h.shape) != 2 || h.shape[0] != NumCodebooks || h.shape[1] < 1 || h.shape[1] > MaxFrames {
		return nil, fmt.Errorf("%w: shape %v: want (%d, T) with T from 1 to %d frames", ErrNPY, h.shape, NumCodebooks, MaxFrames)
	}
	frames := h.shape[1]
	data := make([]byte, NumCodebooks*frames*size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("%w: data: want %d bytes: %w", ErrNPY, len(data), err)
	}
	if n, _ := io.CopyN(io.Discard, r, 1); n != 0 {
		return nil, fmt.Errorf("%w: data after the %d bytes the shape calls for", ErrNPY, len(data))
	}
	return npyCodes(data, h.descr, frames, h.fortran), nil
}

func npyCodes(data []byte, descr string, frames int, fortran bool) Codes {
	size := npyItemSizes[descr]
	c := make(Codes, NumCodebooks)
	for cb := range c {
		c[cb] = make([]int, frames)
		for t := range frames {
			i := cb*frames + t
			if fortran {
				i = t*NumCodebooks + cb
			}
			c[cb][t] = npyValue(data[i*size:], descr)
		}
	}
	return c
}

func npyValue(b []byte, descr string) int {
	switch descr {
	case "<i8":
		return int(int64(binary.LittleEndian.Uint64(b)))
	case "<i4":
		return int(int32(binary.LittleEndian.Uint32(b)))
	case "<i2":
		return int(int16(binary.LittleEndian.Uint16(b)))
	}
	return int(binary.LittleEndian.Uint16(b))
}

func readNPYHeader(r io.Reader) (*npyHeader, error) {
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil || string(pre[:6]) != npyMagic {
		return nil, fmt.Errorf("%w: not a .npy file (no \\x93NUMPY magic)", ErrNPY)
	}
	var n int
	switch pre[6] {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return nil, fmt.Errorf("%w: header length: %w", ErrNPY, err)
		}
		n = int(binary.LittleEndian.Uint16(pre[8:10]))
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, fmt.Errorf("%w: header length: %w", ErrNPY, err)
		}
		n = int(binary.LittleEndian.Uint32(l[:]))
	default:
		return nil, fmt.Errorf("%w: format version %d.%d: want 1.0, 2.0 or 3.0", ErrNPY, pre[6], pre[7])
	}
	if n > maxNPYHeader {
		return nil, fmt.Errorf("%w: header of %d bytes: want at most %d", ErrNPY, n, maxNPYHeader)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrNPY, err)
	}
	return parseNPYHeader(string(hdr))
}

// parseNPYHeader reads the Python dict literal of a .npy header, such as
// {'descr': '<i8', 'fortran_order': False, 'shape': (10, 412), }.
func parseNPYHeader(s string) (*npyHeader, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("%w: header %q is not a dict", ErrNPY, s)
	}
	h := &npyHeader{}
	seen := map[string]bool{}
	rest := strings.TrimSpace(s[1 : len(s)-1])
	for rest != "" {
		key, val, tail, err := npyEntry(rest)
		if err != nil {
			return nil, err
		}
		if err := h.set(key, val); err != nil {
			return nil, err
		}
		seen[key] = true
		rest = tail
	}
	if !seen["descr"] || !seen["fortran_order"] || !seen["shape"] {
		return nil, fmt.Errorf("%w: header %q lacks descr, fortran_order or shape", ErrNPY, s)
	}
	return h, nil
}

// npyEntry splits "'key': value, rest" into its parts.
func npyEntry(s string) (key, val, rest string, err error) {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') {
		return "", "", "", fmt.Errorf("%w: header: want a quoted key at %q", ErrNPY, s)
	}
	end := strings.IndexByte(s[1:], s[0])
	if end < 0 {
		return "", "", "", fmt.Errorf("%w: header: unterminated key", ErrNPY)
	}
	key, s = s[1:end+1], strings.TrimSpace(s[end+2:])
	s, ok := strings.CutPrefix(s, ":")
	if !ok {
		return "", "", "", fmt.Errorf("%w: header: want ':' after %q", ErrNPY, key)
	}
	s = strings.TrimSpace(s)
	stop := strings.IndexByte(s, ',')
	if strings.HasPrefix(s, "(") {
		stop = strings.IndexByte(s, ')') + 1
	}
	if stop <= 0 {
		stop = len(s)
	}
	val, rest = strings.TrimSpace(s[:stop]), strings.TrimSpace(s[stop:])
	rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	return key, val, rest, nil
}

func (h *npyHeader) set(key, val string) error {
	switch key {
	case "descr":
		h.descr = strings.Trim(val, "'\"")
	case "fortran_order":
		if val != "True" && val != "False" {
			return fmt.Errorf("%w: fortran_order %q: want True or False", ErrNPY, val)
		}
		h.fortran = val == "True"
	case "shape":
		return h.setShape(val)
	default:
		return fmt.Errorf("%w: header key %q: want descr, fortran_order and shape", ErrNPY, key)
	}
	return nil
}

func (h *npyHeader) setShape(val string) error {
	inner, ok := strings.CutPrefix(val, "(")
	if inner, ok2 := strings.CutSuffix(inner, ")"); ok && ok2 {
		for _, f := range strings.Split(inner, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			n, err := strconv.Atoi(f)
			if err != nil || n < 0 {
				return fmt.Errorf("%w: shape %s: bad dimension %q", ErrNPY, val, f)
			}
			h.shape = append(h.shape, n)
		}
		return nil
	}
	return fmt.Errorf("%w: shape %q: want a tuple", ErrNPY, val)
}

// ReadFishReference reads one reference in fish-speech's layout: the code
// array at npyPath and its transcript in the .lab file beside it (same name,
// .lab extension), trimmed of surrounding white space and a byte order mark.
// The transcript rule and code ranges are left to Validate.
func ReadFishReference(npyPath string) (Reference, error) {
	f, err := os.Open(npyPath)
	if err != nil {
		return Reference{}, fmt.Errorf("voices: %w", err)
	}
	defer f.Close()
	codes, err := ReadNPY(f)
	if err != nil {
		return Reference{}, fmt.Errorf("voices: %s: %w", npyPath, err)
	}
	lab := strings.TrimSuffix(npyPath, filepath.Ext(npyPath)) + ".lab"
	text, err := os.ReadFile(lab)
	if err != nil {
		return Reference{}, fmt.Errorf("voices: transcript for %s: %w (put the exact transcript in %s)", npyPath, err, filepath.Base(lab))
	}
	text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
	return Reference{Text: strings.TrimSpace(string(text)), Codes: codes}, nil
}
