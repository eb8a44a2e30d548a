package mirror

import (
	"errors"
	"strconv"
	"strings"
)

// errMultiRange marks a Range header with several ranges; the server then
// answers with the whole file.
var errMultiRange = errors.New("several ranges")

// errUnsatisfiable marks a range that does not overlap the file.
var errUnsatisfiable = errors.New("range not satisfiable")

// parseRange parses a single "bytes=a-b", "bytes=a-" or "bytes=-n" range
// against a file of size bytes and returns the inclusive [start, end].
func parseRange(h string, size int64) (start, end int64, err error) {
	unit, spec, ok := strings.Cut(h, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") { // units are case-insensitive (RFC 9110 14.1)
		return 0, 0, errors.New("range unit is not bytes")
	}
	if strings.Contains(spec, ",") {
		return 0, 0, errMultiRange
	}
	a, b, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, 0, errors.New("range has no '-'")
	}
	if a == "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return 0, 0, errUnsatisfiable
		}
		return max(size-n, 0), size - 1, checkSat(max(size-n, 0), size)
	}
	start, err = strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, errors.New("bad range start")
	}
	end = size - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil || end < start {
			return 0, 0, errors.New("bad range end")
		}
		end = min(end, size-1)
	}
	return start, end, checkSat(start, size)
}

func checkSat(start, size int64) error {
	if start >= size {
		return errUnsatisfiable
	}
	return nil
}
