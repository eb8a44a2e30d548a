package pins

import (
	"context"
	"errors"
	"hash"
	"os"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// minMapSize is the smallest file HashFile maps: below it a single read
// costs less than setting up and tearing down a mapping.
const minMapSize = 4 << 20

// errShrunk is the error of a mapped file that became shorter while it was
// hashed (reading past its new end faults).
var errShrunk = errors.New("the file became shorter while it was being hashed")

// hashMapped hashes a regular file of at least minMapSize bytes through a
// read-only shared mapping. ok is false, with no error, when the file is
// not mapped (too small, not regular, mapping refused); the caller then
// reads it. The kernel is told the mapping is read in order, so it reads
// ahead of the faults as it does for read.
func hashMapped(ctx context.Context, f *os.File, h hash.Hash, progress func(n int64)) (done int64, ok bool, err error) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < minMapSize || int64(int(fi.Size())) != fi.Size() {
		return 0, false, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, false, nil
	}
	defer unix.Munmap(m)
	unix.Madvise(m, unix.MADV_SEQUENTIAL)
	// A fault in the mapping (the file was truncated under us) panics in
	// this goroutine instead of ending the process; it becomes errShrunk.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if re, isRuntime := r.(runtime.Error); isRuntime && isFault(re) {
				ok, err = true, errShrunk
				return
			}
			panic(r)
		}
	}()
	for len(m[done:]) > 0 {
		if err := ctx.Err(); err != nil {
			return done, true, err
		}
		n := min(int64(hashBufSize), int64(len(m))-done)
		h.Write(m[done : done+n])
		done += n
		if progress != nil {
			progress(n)
		}
	}
	return done, true, nil
}

// isFault reports whether a runtime error is a memory fault (which carries
// the faulting address) rather than, say, an index out of range.
func isFault(e runtime.Error) bool {
	_, ok := e.(interface{ Addr() uintptr })
	return ok
}
