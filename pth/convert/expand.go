package convert

import (
	"errors"
	"fmt"

	"github.com/drama-tts/drama/pth"
)

// MaxExpand bounds what a conversion may write, as a multiple of the
// checkpoint's storage bytes, unless Options.AllowExpand is set. A
// checkpoint of plain tensors writes each stored byte once; views that
// overlap their storage (stride 0, a broadcast) write its bytes again, and
// a few kilobytes of them could ask for gigabytes of output.
const MaxExpand = 2

// ErrExpand reports a conversion whose tensors would write more than
// MaxExpand times the checkpoint's storage bytes.
var ErrExpand = errors.New("convert: tensors expand past their storages")

// ExpandError is a conversion refused by MaxExpand. It matches ErrExpand
// with errors.Is.
type ExpandError struct {
	Source string // the checkpoint's name
	// Output is the bytes of tensor data the output would hold; Read the
	// same tensors counted at the narrower of their source and output
	// dtypes (a cast to a wider dtype is no expansion): the measure held
	// against MaxExpand x Stored.
	Output, Read int64
	Stored       int64 // bytes of the checkpoint's storages
	// Storage is the storage written most beyond its size: by Views
	// tensors, StorageRead bytes in all; Worst is the largest of them.
	Storage     *pth.Storage
	StorageRead int64
	Views       int
	Worst       *pth.Tensor
}

// Error names the checkpoint, the bytes, the storage and its worst view.
func (e *ExpandError) Error() string {
	msg := fmt.Sprintf("convert: %s: its tensors would write %d bytes (%d counted at their source dtypes) from %d bytes of storage, more than %dx",
		e.Source, e.Output, e.Read, e.Stored, MaxExpand)
	if w, s := e.Worst, e.Storage; w != nil && s != nil {
		msg += fmt.Sprintf(": storage %q of %d bytes is written as %d bytes by %d tensors, the largest %q of shape %v, strides %v",
			s.Key, s.Size, e.StorageRead, e.Views, w.Name, w.Shape, w.Stride)
	}
	return msg
}

// Unwrap gives ErrExpand.
func (e *ExpandError) Unwrap() error { return ErrExpand }

// checkExpand refuses a plan whose tensors would write more than MaxExpand
// times the storages of r.
func (p *Plan) checkExpand(r *pth.Reader) error {
	var stored int64
	for _, s := range r.Storages {
		stored += s.Size
	}
	type use struct {
		read    int64
		views   int
		largest *pth.Tensor
	}
	uses := map[*pth.Storage]*use{}
	var read int64
	for _, it := range p.Items {
		src := it.Src
		if _, v := src.FoldedFrom(); v != nil {
			src = v // a folded weight reads v (and g, one value a slice)
		}
		n := src.Numel() * int64(min(src.DType.Size(), it.Out.Size()))
		read += n
		if src.Storage == nil {
			continue
		}
		u := uses[src.Storage]
		if u == nil {
			u = &use{}
			uses[src.Storage] = u
		}
		u.read += n
		u.views++
		if u.largest == nil || src.Len() > u.largest.Len() {
			u.largest = src
		}
	}
	if read <= MaxExpand*stored || p.opts.AllowExpand {
		return nil
	}
	e := &ExpandError{Source: p.name, Output: p.Layout.DataSize(), Read: read, Stored: stored}
	for _, s := range r.Storages { // in first-use order, so the report is stable
		if u := uses[s]; u != nil && (e.Storage == nil || u.read-s.Size > e.StorageRead-e.Storage.Size) {
			e.Storage, e.StorageRead, e.Views, e.Worst = s, u.read, u.views, u.largest
		}
	}
	return e
}
