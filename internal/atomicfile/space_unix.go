//go:build unix

package atomicfile

import (
	"errors"
	"path/filepath"
	"syscall"
)

// FreeBytes returns the bytes available to this user on the file system
// holding path, or its nearest existing parent when path is not made yet.
func FreeBytes(path string) (int64, error) {
	for p := path; ; p = filepath.Dir(p) {
		var st syscall.Statfs_t
		err := syscall.Statfs(p, &st)
		if err == nil {
			return int64(st.Bavail) * int64(st.Bsize), nil
		}
		if !errors.Is(err, syscall.ENOENT) || p == filepath.Dir(p) {
			return 0, err
		}
	}
}
