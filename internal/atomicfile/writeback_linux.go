package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// StartWriteback asks the kernel to start writing the whole pages inside
// the n bytes of f at off to disk now, without waiting for them, so that
// the Sync at the end of a large write finds little left and the disk
// works while the rest is still being produced. The partial pages at the
// range's edges, which a neighbouring write may still change, are left to
// that Sync. It changes nothing a reader sees; an I/O error is reported by
// the Sync, as it would be without this call.
func StartWriteback(f *os.File, off, n int64) {
	const page = 4096
	start, end := (off+page-1)/page*page, (off+n)/page*page
	if off >= 0 && end > start {
		_ = unix.SyncFileRange(int(f.Fd()), start, end-start, unix.SYNC_FILE_RANGE_WRITE)
	}
}
