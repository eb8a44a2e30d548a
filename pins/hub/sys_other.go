//go:build !linux

package hub

import (
	"errors"
	"os"
)

// allocate is not supported here: preallocate falls back to a sparse
// truncate, and a full disk shows as ENOSPC while writing.
func allocate(*os.File, int64) error { return errors.ErrUnsupported }

// startWriteback does nothing here; the fsync before the rename does the
// work.
func startWriteback(*os.File, int64, int64) {}
