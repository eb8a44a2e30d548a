package convert

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"os"
	"runtime/debug"

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

// hashMapped hashes the first size bytes of f through a read-only mapping:
// no copy into a buffer and no read call per block, which is most of what
// hashing a cached file costs besides sha256 itself. ok is false, with
// nothing hashed, when the file cannot be mapped; a fault in the mapping
// (the file was truncated meanwhile) is an error, not a crash.
func hashMapped(ctx context.Context, f *os.File, size int64, h hash.Hash) (ok bool, err error) {
	if size < 1<<20 || int64(int(size)) != size {
		return false, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return false, nil
	}
	defer unix.Munmap(m)
	unix.Madvise(m, unix.MADV_SEQUENTIAL)
	var off int
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); fault {
				ok, err = true, fmt.Errorf("convert: hash source: the file became shorter than %d bytes at offset %d", size, off)
				return
			}
			panic(r)
		}
	}()
	for off < len(m) {
		if err := ctx.Err(); err != nil {
			return true, context.Cause(ctx)
		}
		n := min(ChunkSize, len(m)-off)
		h.Write(m[off : off+n])
		off += n
	}
	return true, nil
}
