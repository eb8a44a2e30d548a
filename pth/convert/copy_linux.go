package convert

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// copyRange copies n bytes from src at off to dst at at inside the kernel
// (copy_file_range), in ChunkSize steps so cancellation and progress stay
// responsive. It reports false, having copied nothing, when the kernel
// cannot do it for these files, so the caller falls back to pread and pwrite.
func (p *Plan) copyRange(ctx context.Context, dst *os.File, at int64, src *os.File, off, n int64) (bool, error) {
	for done := int64(0); done < n; {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		in, out := off+done, at+done
		c, err := unix.CopyFileRange(int(src.Fd()), &in, int(dst.Fd()), &out, int(min(n-done, ChunkSize)), 0)
		if err != nil || c == 0 {
			if done == 0 && (err == nil || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP)) {
				return false, nil
			}
			if err == nil {
				err = errors.New("source ended early")
			}
			return true, &os.PathError{Op: "copy_file_range", Path: dst.Name(), Err: err}
		}
		done += int64(c)
		if p.opts.Progress != nil {
			p.opts.Progress(int64(c))
		}
	}
	return true, nil
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
