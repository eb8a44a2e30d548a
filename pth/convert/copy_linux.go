package convert

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// The system calls the copier makes (variables for tests).
var (
	copyFileRange = unix.CopyFileRange
	cloneRange    = unix.IoctlFileCloneRange
)

// kernelCopy copies up to n bytes from src at off to dst at at inside the
// kernel (copy_file_range) and returns how many it copied; unsupported is
// true, with nothing copied, when the kernel cannot copy between these
// files.
func kernelCopy(dst *os.File, at int64, src *os.File, off, n int64) (copied int64, unsupported bool, err error) {
	m, err := copyFileRange(int(src.Fd()), &off, int(dst.Fd()), &at, int(n), 0)
	if m == 0 && (err == nil || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP)) {
		// Nothing copied: this kernel or pair of file systems cannot (or
		// the source is shorter than it said, which pread then tells).
		return 0, true, nil
	}
	if err != nil {
		return 0, false, &os.PathError{Op: "copy_file_range", Path: dst.Name(), Err: err}
	}
	return int64(m), false, nil
}

// clone makes the n bytes of dst at at share the blocks of src at off
// (FICLONERANGE); it fails where the file system has no reflink or the
// range is not whole blocks.
func clone(dst *os.File, at int64, src *os.File, off, n int64) error {
	return cloneRange(int(dst.Fd()), &unix.FileCloneRange{Src_fd: int64(src.Fd()), Src_offset: uint64(off),
		Src_length: uint64(n), Dest_offset: uint64(at)})
}

// blockSize is the block size of the file system holding f (4096 when it
// cannot be read).
func blockSize(f *os.File) int64 {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Blksize <= 0 {
		return 4096
	}
	return int64(st.Blksize)
}

// dropCache asks the kernel to drop the cached pages of the file at path,
// if there is one; it loses nothing (the file is left as it is, its clean
// pages are read from disk again when needed). Replacing a file whose
// pages are cached costs the rename their eviction; dropping them while
// the new file's data is being synced takes that off the critical path.
func dropCache(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
}
