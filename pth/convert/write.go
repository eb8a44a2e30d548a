package convert

import (
	"context"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/drama-tts/drama/internal/filehash"
	"github.com/drama-tts/drama/safetensors"
)

// Write converts into path. It first checks that the file system holding
// path has room for the whole output (an error wrapping
// atomicfile.ErrNoSpace otherwise). It writes a temporary file beside path (see
// atomicfile.Write): the tensors at their planned offsets by several
// workers with pwrite while another goroutine hashes the source, then the
// header with the digest, then syncs the file and renames it over path. On
// any error, or when ctx is cancelled, the temporary file is removed and path
// is untouched (a file already at path keeps its content; while the data
// is synced its cached pages are dropped, which loses nothing and spares
// the rename their eviction).
func (p *Plan) Write(ctx context.Context, path string) error {
	if err := p.CheckSpace(path); err != nil {
		return err
	}
	return atomicfile.Write(path, 0o644, func(f *os.File) error {
		if err := f.Truncate(p.Layout.Size); err != nil {
			return fmt.Errorf("convert: %w", err)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		hashed := make(chan hashResult, 1)
		if p.opts.SourceSHA256 != "" {
			hashed <- hashResult{sum: p.opts.SourceSHA256}
		} else {
			go func() { hashed <- hashFile(ctx, p.src, p.size) }()
		}
		if err := p.fill(ctx, cancel, f); err != nil {
			return err
		}
		// Flush the data while the hash finishes; the header comes after.
		// Meanwhile the output being replaced (with --force) has its
		// cached pages dropped, so the rename over it is quick.
		synced := make(chan error, 1)
		go func() { synced <- f.Sync() }()
		dropCache(path)
		h := <-hashed
		if err := <-synced; err != nil {
			return fmt.Errorf("convert: sync %s: %w", path, err)
		}
		if h.err != nil {
			return h.err
		}
		return p.writeHeader(f, h.sum)
	})
}

// freeBytes reads the free space of a file system (a variable for tests).
var freeBytes = atomicfile.FreeBytes

// CheckSpace refuses a write the file system holding path has no room for
// (an error wrapping atomicfile.ErrNoSpace), before the temporary is made.
// The file being replaced (--force) keeps its blocks until the rename, so
// it frees nothing. Write calls it; a caller may call it sooner.
func (p *Plan) CheckSpace(path string) error {
	dir := filepath.Dir(path)
	free, err := freeBytes(dir)
	if err != nil || free >= p.Layout.Size {
		return nil // unknown: the write will tell
	}
	return fmt.Errorf("convert: %s: %w", path, &atomicfile.SpaceError{Dir: dir, Need: p.Layout.Size, Free: free})
}

// fill writes every tensor. The tensors whose bytes are one run of the
// source file taken as they are (rawRun) go to one copier, in file order,
// so the output is written front to back as cp writes it and the copy
// keeps one core at most busy; the others (cast, gathered from a strided
// view, folded) go to the plan's workers, in file order too.
func (p *Plan) fill(ctx context.Context, cancel context.CancelCauseFunc, f *os.File) error {
	var raw, rest []int
	for i := range p.Layout.Tensors {
		if p.rawRun(i) {
			raw = append(raw, i)
		} else {
			rest = append(rest, i)
		}
	}
	flush := newFlusher(f)
	defer flush.close()
	var wg sync.WaitGroup
	if len(raw) > 0 {
		wg.Go(func() {
			if err := p.copyRaw(ctx, f, flush, raw); err != nil {
				cancel(err)
			}
		})
	}
	workers := p.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	for range min(workers, len(rest)) {
		wg.Go(func() {
			for i := range next {
				if err := p.writeTensor(ctx, i, f, flush, p.Layout.Tensors[i].Offset); err != nil {
					cancel(err)
				}
			}
		})
	}
	feed(ctx, next, rest)
	wg.Wait()
	return context.Cause(ctx)
}

// rawRun reports whether item i's output bytes are one run of the source
// file as it stands: same dtype, a contiguous view of a stored storage.
func (p *Plan) rawRun(i int) bool {
	it := p.Items[i]
	t := it.Src
	_, isFile := p.src.(*os.File)
	return isFile && t.DType.String() == string(it.Out) && !t.Folded() && t.Storage != nil && t.Contiguous() && t.Len() > 0
}

// copyRaw copies the raw runs of items idx, in order, from the source file
// into f at their planned offsets.
func (p *Plan) copyRaw(ctx context.Context, f *os.File, flush *flusher, idx []int) error {
	c := &copier{flush: flush, progress: p.opts.Progress}
	src := p.src.(*os.File)
	defer func() { p.Reflinked = c.cloned }()
	for _, i := range idx {
		t := p.Items[i].Src
		if err := c.copy(ctx, f, p.Layout.Tensors[i].Offset, src, t.FileOffset(), t.Len()); err != nil {
			return fmt.Errorf("convert: tensor %q: %w", t.Name, err)
		}
	}
	return nil
}

// feed hands out the tensor indexes of idx until ctx is done.
func feed(ctx context.Context, next chan<- int, idx []int) {
	defer close(next)
	for _, i := range idx {
		select {
		case next <- i:
		case <-ctx.Done():
			return
		}
	}
}

// writeHeader re-plans the header with the source digest (a fixed-length
// string, so every offset stays) and writes it at the start of f.
func (p *Plan) writeHeader(f *os.File, sum string) error {
	l, err := safetensors.Plan(p.headers(), p.metadata(sum))
	if err != nil {
		return err
	}
	if len(l.Header) != len(p.Layout.Header) {
		return fmt.Errorf("convert: header length changed: want %d, got %d", len(p.Layout.Header), len(l.Header))
	}
	p.Layout = l
	if _, err := f.WriteAt(l.Header, 0); err != nil {
		return fmt.Errorf("convert: write header: %w", err)
	}
	return nil
}

type hashResult struct {
	sum string
	err error
}

// hashFile returns the sha256 of the first size bytes of r, in place
// through mappings when r is a file that can be mapped.
func hashFile(ctx context.Context, r io.ReaderAt, size int64) hashResult {
	sum, err := filehash.SHA256At(ctx, r, size, nil)
	if err != nil {
		return hashResult{err: fmt.Errorf("convert: hash source: %w", err)}
	}
	return hashResult{sum: sum}
}
