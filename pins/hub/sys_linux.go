package hub

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate reserves size bytes for f (fallocate), so that a full disk
// shows now.
func allocate(f *os.File, size int64) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, size)
}

// startWriteback asks the kernel to begin writing a range to disk without
// waiting, so the fsync before the final rename has little left to do.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
