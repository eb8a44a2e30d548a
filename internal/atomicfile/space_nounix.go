//go:build !unix

package atomicfile

import "errors"

// FreeBytes cannot read a file system's free space here: it always fails,
// and the caller lets the write itself tell.
func FreeBytes(path string) (int64, error) {
	return 0, errors.New("free space: not supported on this system")
}
