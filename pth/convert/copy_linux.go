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

// mapWindow is how much of the source hashMapped maps at a time; each
// window is unmapped once hashed, so the resident set grows by at most this
// much, not by the source's size.
const mapWindow = 8 << 20

// hashMapped hashes the first size bytes of f through read-only mappings
// of mapWindow bytes, one after the other: no copy into a buffer and no
// read call per block, which is most of what hashing a cached file costs
// besides sha256 itself. ok is false, with nothing hashed, when the file
// cannot be mapped; a fault in a mapping (the file was truncated
// meanwhile) is an error, not a crash.
func hashMapped(ctx context.Context, f *os.File, size int64, h hash.Hash) (ok bool, err error) {
	if size < 1<<20 {
		return false, nil
	}
	for off := int64(0); off < size; off += mapWindow {
		if err := ctx.Err(); err != nil {
			return true, context.Cause(ctx)
		}
		m, err := unix.Mmap(int(f.Fd()), off, int(min(mapWindow, size-off)), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			if off == 0 {
				return false, nil
			}
			return true, fmt.Errorf("convert: hash source: map offset %d: %w", off, err)
		}
		err = hashWindow(ctx, m, h)
		unix.Munmap(m)
		if err != nil {
			return true, fmt.Errorf("convert: hash source: %w (in the %d bytes from offset %d)", err, len(m), off)
		}
	}
	return true, nil
}

// hashWindow hashes the mapped bytes m; a fault in the mapping panics in
// this goroutine instead of ending the process, and becomes an error.
func hashWindow(ctx context.Context, m []byte, h hash.Hash) (err error) {
	unix.Madvise(m, unix.MADV_SEQUENTIAL)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); fault {
				err = errors.New("the file became shorter while it was being hashed")
				return
			}
			panic(r)
		}
	}()
	for off := 0; off < len(m); off += ChunkSize {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		h.Write(m[off:min(off+ChunkSize, len(m))])
	}
	return nil
}
