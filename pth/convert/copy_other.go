//go:build !linux

package convert

import (
	"context"
	"hash"
	"os"
)

// copyRange reports false: without copy_file_range the caller uses pread
// and pwrite.
func (p *Plan) copyRange(context.Context, *os.File, int64, *os.File, int64, int64) (bool, error) {
	return false, nil
}

// dropCache does nothing on this system.
func dropCache(string) {}

// hashMapped reports false: the caller reads the file.
func hashMapped(context.Context, *os.File, int64, hash.Hash) (bool, error) { return false, nil }
