//go:build !linux

package convert

import (
	"errors"
	"os"
)

// kernelCopy reports unsupported: without copy_file_range the copier uses
// pread and pwrite.
func kernelCopy(*os.File, int64, *os.File, int64, int64) (int64, bool, error) { return 0, true, nil }

// clone fails: no reflink on this system.
func clone(*os.File, int64, *os.File, int64, int64) error { return errors.ErrUnsupported }

// blockSize is a common file system block size.
func blockSize(*os.File) int64 { return 4096 }

// dropCache does nothing on this system.
func dropCache(string) {}
