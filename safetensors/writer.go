package safetensors

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io"
	"os"
	"runtime"
	"sync"
)

// TensorHeader describes a tensor to be written: everything but its bytes.
type TensorHeader struct {
	Name  string
	DType DType
	Shape []int64
}

// PlannedTensor is a tensor of a Layout with its fixed place in the file.
type PlannedTensor struct {
	TensorHeader
	Index  int   // position in Layout.Tensors
	Offset int64 // absolute byte offset of the data in the file
	Size   int64 // data bytes
}

// Layout is a planned safetensors file: its header bytes and the byte range
// of every tensor. Build one with Plan.
type Layout struct {
	Tensors  []PlannedTensor // in data order, as given to Plan
	Metadata map[string]string
	Header   []byte // the 8-byte length and the JSON header, space-padded
	Size     int64  // total file size
}

// DataSize returns the bytes of tensor data (the file minus its header).
func (l *Layout) DataSize() int64 { return l.Size - int64(len(l.Header)) }

// Plan lays out a file holding tensors in the given order, with metadata as
// its __metadata__ (omitted when empty). The JSON header lists __metadata__
// first, then the tensors in data order, and is padded with spaces so the
// data starts at a multiple of 8 bytes.
func Plan(tensors []TensorHeader, metadata map[string]string) (*Layout, error) {
	l := &Layout{Metadata: metadata}
	seen := make(map[string]bool, len(tensors))
	var at int64
	for i, h := range tensors {
		if err := checkHeader(h, seen); err != nil {
			return nil, err
		}
		size, _ := byteSize(h.DType, h.Shape)
		h.Shape = append([]int64{}, h.Shape...)
		l.Tensors = append(l.Tensors, PlannedTensor{TensorHeader: h, Index: i, Offset: at, Size: size})
		at += size
	}
	hdr, err := encodeHeader(l.Tensors, metadata)
	if err != nil {
		return nil, err
	}
	l.Header = hdr
	for i := range l.Tensors {
		l.Tensors[i].Offset += int64(len(hdr))
	}
	l.Size = int64(len(hdr)) + at
	return l, nil
}

func checkHeader(h TensorHeader, seen map[string]bool) error {
	switch {
	case h.Name == "" || h.Name == "__metadata__":
		return fmt.Errorf("safetensors: plan: invalid tensor name %q", h.Name)
	case seen[h.Name]:
		return fmt.Errorf("safetensors: plan: tensor %q given twice", h.Name)
	case !h.DType.Valid():
		return fmt.Errorf("safetensors: plan: tensor %q: unsupported dtype %q", h.Name, h.DType)
	}
	if _, ok := byteSize(h.DType, h.Shape); !ok {
		return fmt.Errorf("safetensors: plan: tensor %q: shape %v is negative or too large", h.Name, h.Shape)
	}
	seen[h.Name] = true
	return nil
}

// encodeHeader returns the length prefix and the padded JSON header, with
// data offsets relative to the data area as the format wants.
func encodeHeader(ts []PlannedTensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.Write(make([]byte, 8))
	b.WriteByte('{')
	if len(metadata) > 0 {
		m, err := json.Marshal(metadata) // map keys are sorted: deterministic
		if err != nil {
			return nil, fmt.Errorf("safetensors: plan: metadata: %w", err)
		}
		b.WriteString(`"__metadata__":`)
		b.Write(m)
	}
	for i, t := range ts {
		if i > 0 || len(metadata) > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(t.Name)
		shape, _ := json.Marshal(t.Shape)
		fmt.Fprintf(&b, `%s:{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}`, name, t.DType, shape, t.Offset, t.Offset+t.Size)
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	hdr := b.Bytes()
	binary.LittleEndian.PutUint64(hdr, uint64(len(hdr)-8))
	return hdr, nil
}

// Source supplies tensor bytes to Layout.WriteFile. WriteTensor must write
// exactly t.Size bytes to w; it may be called from several goroutines at
// once, each for a different tensor.
type Source interface {
	WriteTensor(ctx context.Context, t *PlannedTensor, w io.Writer) error
}

// Grouper is an optional interface of a Source whose tensors are produced
// together: neighbouring tensors (in file order) with the same group are
// handed to one worker, which writes them in order, so no worker waits for
// another to produce a shared result.
type Grouper interface {
	Group(t *PlannedTensor) int
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, t *PlannedTensor, w io.Writer) error

// WriteTensor calls f.
func (f SourceFunc) WriteTensor(ctx context.Context, t *PlannedTensor, w io.Writer) error {
	return f(ctx, t, w)
}

// WriteOptions tune Layout.WriteFile.
type WriteOptions struct {
	// Workers is how many tensors are filled at once; 0 means GOMAXPROCS.
	Workers int
	// Slots, when not nil, bounds the work in flight across every file that
	// shares it: a worker takes a slot (sends on Slots) before each batch of
	// tensors (a tensor, or a Grouper's run of one group) and gives it back
	// (receives) when the batch is written. Its capacity is the bound.
	Slots chan struct{}
	// Progress, when set, is called after each tensor with the data bytes
	// written so far and the total. Calls are serialized.
	Progress func(done, total int64)
	// Perm is the new file's mode; 0 means 0644.
	Perm os.FileMode
	// Filled, when set, is called once every tensor has been written, before
	// the file is synced and renamed: a caller writing several files can
	// start filling the next one while this one's data go to disk.
	Filled func()
}

// ErrShortTensor matches a Source that wrote fewer or more bytes than planned.
var ErrShortTensor = errors.New("safetensors: tensor size mismatch")

// WriteFile writes the planned file to path: the header, then every tensor's
// bytes from src at their fixed offsets, filled by opts.Workers goroutines
// with positioned writes, each write sent on to the disk at once
// (atomicfile.StartWriteback, from a goroutine of its own, so no worker
// waits on the disk) so the final sync has little left. It writes to a temporary file in path's directory,
// syncs it and renames it over path (see atomicfile.Write); on any error (or when
// ctx is cancelled) the temporary file is removed and path is untouched.
func (l *Layout) WriteFile(ctx context.Context, path string, src Source, opts WriteOptions) error {
	err := atomicfile.Write(path, opts.Perm, func(f *os.File) error {
		if err := l.fill(ctx, f, src, opts); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if opts.Filled != nil {
			opts.Filled()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

// fill writes the header and all tensors into f.
func (l *Layout) fill(ctx context.Context, f *os.File, src Source, opts WriteOptions) error {
	if err := f.Truncate(l.Size); err != nil {
		return err
	}
	if _, err := f.WriteAt(l.Header, 0); err != nil {
		return err
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &progress{fn: opts.Progress, total: l.DataSize()}
	wb := newWriteback(f)
	defer wb.close()
	batches := l.batches(src)
	next := make(chan []int)
	var wg sync.WaitGroup
	for range min(workers, max(len(batches), 1)) {
		wg.Go(func() {
			for b := range next {
				if !take(ctx, opts.Slots) {
					return
				}
				for _, i := range b {
					if err := l.fillOne(ctx, f, wb, src, i); err != nil {
						cancel(err)
					}
					p.add(l.Tensors[i].Size)
				}
				if opts.Slots != nil {
					<-opts.Slots
				}
			}
		})
	}
	feed(ctx, next, batches)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// take waits for a slot of slots (none needed when slots is nil); false
// when ctx is done first.
func take(ctx context.Context, slots chan struct{}) bool {
	if slots == nil {
		return true
	}
	select {
	case slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// batches splits the tensors, in file order, into runs that one worker
// writes: runs of one group for a Grouper, else single tensors.
func (l *Layout) batches(src Source) [][]int {
	g, grouped := src.(Grouper)
	var out [][]int
	for i := range l.Tensors {
		if grouped && len(out) > 0 {
			last := out[len(out)-1]
			if g.Group(&l.Tensors[last[0]]) == g.Group(&l.Tensors[i]) {
				out[len(out)-1] = append(last, i)
				continue
			}
		}
		out = append(out, []int{i})
	}
	return out
}

// feed hands out tensors in file order, so a Source that produces several
// neighbouring tensors together holds few results at a time.
func feed(ctx context.Context, next chan<- []int, batches [][]int) {
	defer close(next)
	for _, b := range batches {
		select {
		case next <- b:
		case <-ctx.Done():
			return
		}
	}
}

func (l *Layout) fillOne(ctx context.Context, f *os.File, wb *writeback, src Source, i int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := &l.Tensors[i]
	w := &boundedWriter{f: f, wb: wb, off: t.Offset, left: t.Size}
	if err := src.WriteTensor(ctx, t, w); err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if w.left != 0 {
		return fmt.Errorf("%w: tensor %q: want %d bytes, got %d", ErrShortTensor, t.Name, t.Size, t.Size-w.left)
	}
	return nil
}

// startWriteback sends written bytes on to the disk (a variable for tests).
var startWriteback = atomicfile.StartWriteback

// writeback starts the writeback of a file's written ranges from a
// goroutine of its own. Starting it can wait for the disk's queue, which
// the input's reads keep full when the page cache is cold; a writer hands
// its range over and goes on, so no conversion waits on the disk to take
// a write. A range that finds the hand-over full is left to the final
// sync.
type writeback struct {
	ranges chan [2]int64 // offset, length
	done   chan struct{}
}

func newWriteback(f *os.File) *writeback {
	wb := &writeback{ranges: make(chan [2]int64, 256), done: make(chan struct{})}
	go func() {
		defer close(wb.done)
		for r := range wb.ranges {
			startWriteback(f, r[0], r[1])
		}
	}()
	return wb
}

// add hands over a written range without waiting.
func (wb *writeback) add(off, n int64) {
	select {
	case wb.ranges <- [2]int64{off, n}:
	default:
	}
}

// close waits until every range handed over has been started.
func (wb *writeback) close() {
	close(wb.ranges)
	<-wb.done
}

// boundedWriter writes at increasing offsets of f and refuses to write past
// the tensor's planned end.
type boundedWriter struct {
	f    *os.File
	wb   *writeback
	off  int64
	left int64
}

// Write writes p at the next offset, refusing bytes past the tensor's end,
// and hands what it wrote to the writeback.
func (w *boundedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > w.left {
		return 0, fmt.Errorf("%w: %d bytes past the planned end", ErrShortTensor, int64(len(p))-w.left)
	}
	n, err := w.f.WriteAt(p, w.off)
	w.wb.add(w.off, int64(n))
	w.off += int64(n)
	w.left -= int64(n)
	return n, err
}

type progress struct {
	mu          sync.Mutex
	fn          func(done, total int64)
	done, total int64
}

func (p *progress) add(n int64) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.fn(p.done, p.total)
}
