package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/drama-tts/drama/internal/atomicfile"
)

// copyChunk is the most one copy_file_range call moves: large, so a copy
// costs few calls, and small enough that cancellation and progress stay
// responsive.
const copyChunk = 32 << 20

// rwChunk is the buffer of one pread and pwrite, where the kernel cannot
// copy.
const rwChunk = 8 << 20

// startWriteback sends written bytes on to the disk (a variable for tests).
var startWriteback = atomicfile.StartWriteback

// flusher starts the writeback of written ranges of one file on its own
// goroutine, so that neither the copier nor a worker waits for the disk
// to take them; when the disk falls behind, send blocks (the disk is the
// limit then).
type flusher struct {
	f    *os.File
	q    chan [2]int64
	done chan struct{}
}

func newFlusher(f *os.File) *flusher {
	fl := &flusher{f: f, q: make(chan [2]int64, 64), done: make(chan struct{})}
	go func() {
		defer close(fl.done)
		for r := range fl.q {
			startWriteback(fl.f, r[0], r[1])
		}
	}()
	return fl
}

// send queues the n bytes at off for writeback.
func (fl *flusher) send(off, n int64) { fl.q <- [2]int64{off, n} }

// close waits for the queued ranges to be started.
func (fl *flusher) close() {
	close(fl.q)
	<-fl.done
}

// copier copies runs of one file into another, one run after the other.
type copier struct {
	flush    *flusher
	progress func(n int64)
	noClone  bool   // the file system has no reflink for these files
	noKernel bool   // copy_file_range does not work for these files
	buf      []byte // for pread and pwrite, when the kernel cannot copy
	cloned   int64  // bytes shared by reflink
}

// copy puts the n bytes of src at off into dst at at. Where the offsets
// agree modulo the file system's block size, the whole blocks are
// reflinked (FICLONERANGE: the output shares the source's blocks, nothing
// is copied or written); everything else is copied inside the kernel
// (copy_file_range), or where the kernel cannot, with large sequential
// pread and pwrite. Every copied range is sent on to the disk at once, so
// the final sync has little left to do.
func (c *copier) copy(ctx context.Context, dst *os.File, at int64, src *os.File, off, n int64) error {
	if !c.noClone {
		if head, body := cloneSpan(at, off, n, blockSize(dst)); body > 0 {
			if err := clone(dst, at+head, src, off+head, body); err == nil {
				c.cloned += body
				if c.progress != nil {
					c.progress(body)
				}
				if err := c.copyBytes(ctx, dst, at, src, off, head); err != nil {
					return err
				}
				return c.copyBytes(ctx, dst, at+head+body, src, off+head+body, n-head-body)
			}
			// No reflink here (another file system, none offered, or a
			// range it refuses): copy instead, and stop trying.
			c.noClone = true
		}
	}
	return c.copyBytes(ctx, dst, at, src, off, n)
}

// cloneSpan splits a run of n bytes from source offset off to output
// offset at into head bytes to copy and then body bytes of whole blocks of
// blk bytes that a reflink can share; body is 0 when the offsets differ
// modulo blk or the run holds no whole block. What follows is copied.
func cloneSpan(at, off, n, blk int64) (head, body int64) {
	if blk <= 0 || at < 0 || off < 0 || at%blk != off%blk {
		return 0, 0
	}
	head = (blk - at%blk) % blk
	if n-head < blk {
		return 0, 0
	}
	return head, (n - head) / blk * blk
}

// copyBytes copies n bytes from src at off to dst at at: copy_file_range
// in steps of copyChunk, or pread and pwrite once the kernel has said it
// cannot copy between these files.
func (c *copier) copyBytes(ctx context.Context, dst *os.File, at int64, src *os.File, off, n int64) error {
	for done := int64(0); done < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		var k int64
		var err error
		if !c.noKernel {
			var unsupported bool
			k, unsupported, err = kernelCopy(dst, at+done, src, off+done, min(n-done, copyChunk))
			if unsupported {
				c.noKernel = true
				continue
			}
		} else {
			k, err = c.readWrite(dst, at+done, src, off+done, n-done)
		}
		if err != nil {
			return err
		}
		c.flush.send(at+done, k)
		done += k
		if c.progress != nil {
			c.progress(k)
		}
	}
	return nil
}

// readWrite copies up to n bytes (rwChunk at most) with one pread and one
// pwrite, and returns how many.
func (c *copier) readWrite(dst *os.File, at int64, src *os.File, off, n int64) (int64, error) {
	if c.buf == nil {
		c.buf = make([]byte, rwChunk)
	}
	b := c.buf[:min(n, rwChunk)]
	if _, err := src.ReadAt(b, off); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("read %d bytes at offset %d of %s (changed or truncated?): %w", len(b), off, src.Name(), err)
	}
	if _, err := dst.WriteAt(b, at); err != nil {
		return 0, err
	}
	return int64(len(b)), nil
}
