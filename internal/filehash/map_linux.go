package filehash

import (
	"context"
	"errors"
	"hash"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// minMapSize is the smallest file SHA256 maps: below it a single read
// costs less than setting up and tearing down a mapping.
const minMapSize = 4 << 20

// mapWindow is how much of a file is mapped at a time. Each window is
// unmapped once hashed, so the process's resident set grows by at most
// this much, not by the file's size.
const mapWindow = 8 << 20

// errShrunk is the error of a mapped file that became shorter while it was
// hashed (reading past its new end faults).
var errShrunk = errors.New("the file became shorter while it was being hashed")

// hashMapped hashes the first size bytes of a regular file (size < 0: all
// of it, as long as it is now), when they are at least minMapSize, through
// read-only shared mappings of mapWindow bytes, one after the other, and
// returns the bytes hashed. ok is false, with nothing hashed, when the file
// is not mapped (too small, not regular, mapping refused); the caller then
// reads it, as it reads whatever follows done when a later window cannot
// be mapped or the file grew. The kernel is told each window is read in
// order, so it reads ahead of the faults as it does for read.
func hashMapped(ctx context.Context, f *os.File, size int64, h hash.Hash, progress func(n int64)) (done int64, ok bool, err error) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false, nil
	}
	if size < 0 {
		size = fi.Size()
	}
	if size < minMapSize {
		return 0, false, nil
	}
	for done < size {
		if ctx.Err() != nil {
			return done, true, context.Cause(ctx)
		}
		n := min(mapWindow, size-done)
		m, err := unix.Mmap(int(f.Fd()), done, int(n), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return done, done > 0, nil
		}
		k, err := hashWindow(ctx, m, h, progress)
		unix.Munmap(m)
		done += k
		if err != nil {
			return done, true, err
		}
	}
	return done, true, nil
}

// hashWindow hashes the mapped bytes m in hashBufSize steps. A fault in the
// mapping (the file was truncated under us) panics in this goroutine
// instead of ending the process; it becomes errShrunk.
func hashWindow(ctx context.Context, m []byte, h hash.Hash, progress func(n int64)) (done int64, err error) {
	unix.Madvise(m, unix.MADV_SEQUENTIAL)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); fault {
				err = errShrunk
				return
			}
			panic(r)
		}
	}()
	for done < int64(len(m)) {
		if ctx.Err() != nil {
			return done, context.Cause(ctx)
		}
		n := min(int64(hashBufSize), int64(len(m))-done)
		h.Write(m[done : done+n])
		done += n
		if progress != nil {
			progress(n)
		}
	}
	return done, nil
}
