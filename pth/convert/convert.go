package convert

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/drama-tts/drama/pth"
	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/dtype"
)

// ChunkSize is the number of source bytes a worker reads at once.
const ChunkSize = 1 << 20

// Target is the --dtype choice for floating-point tensors.
type Target string

// The targets: keep each tensor's dtype, or cast F64/F32/F16/BF16 tensors.
const (
	Keep Target = "keep"
	F16  Target = "f16"
	BF16 Target = "bf16"
	F32  Target = "f32"
)

// ErrOptions reports an invalid option.
var ErrOptions = errors.New("convert: invalid option")

// ErrDType reports a tensor whose dtype safetensors cannot hold.
var ErrDType = errors.New("convert: dtype not supported by safetensors")

// Options select and shape the output.
type Options struct {
	DType          Target         // empty means Keep
	FoldWeightNorm bool           // fold weight-norm pairs into P+"weight"
	StripPrefix    string         // see pth.StripPrefix; empty keeps names
	Drop           *regexp.Regexp // drop tensors whose (stripped) name matches
	Workers        int            // 0 means GOMAXPROCS
	// SourceSHA256, when set, is the source's digest as already verified by
	// the caller (against pins, say); it is recorded without hashing the
	// source again.
	SourceSHA256 string
	// AllowExpand lets the output exceed MaxExpand times the checkpoint's
	// storage bytes (views that repeat their storage's elements).
	AllowExpand bool
	// Progress, when set, is called with the number of output bytes just
	// written, from several goroutines at once.
	Progress func(n int64)
}

// Item is one output tensor and where its bytes come from.
type Item struct {
	Src *pth.Tensor
	Out safetensors.DType
}

// Plan is a planned conversion.
type Plan struct {
	Items   []Item
	Dropped []string
	Folded  int
	Layout  *safetensors.Layout
	// Reflinked is, after Write, how many output bytes share the source's
	// blocks (a reflink, where the file system offers one and the offsets
	// allow it) instead of being copied.
	Reflinked int64
	opts      Options
	src       io.ReaderAt
	size      int64
	name      string
}

// New plans the conversion of r's tensors. src and size give the checkpoint
// file, which is hashed while writing; name is recorded in the metadata.
// Unless opts.AllowExpand is set, a plan whose tensors would write more
// than MaxExpand times r's storage bytes is refused with an *ExpandError.
func New(r *pth.Reader, src io.ReaderAt, size int64, name string, opts Options) (*Plan, error) {
	if opts.DType == "" {
		opts.DType = Keep
	}
	switch opts.DType {
	case Keep, F16, BF16, F32:
	default:
		return nil, fmt.Errorf("%w: dtype %q: want keep, f16, bf16 or f32", ErrOptions, opts.DType)
	}
	if s := opts.SourceSHA256; s != "" && !isHexDigest(s) {
		return nil, fmt.Errorf("%w: source sha256 %q: want 64 lower-case hex digits", ErrOptions, s)
	}
	p := &Plan{opts: opts, src: src, size: size, name: name}
	ts := pth.StripPrefix(r.Tensors, opts.StripPrefix)
	for _, t := range ts {
		if opts.Drop != nil && opts.Drop.MatchString(t.Name) {
			p.Dropped = append(p.Dropped, t.Name)
			continue
		}
		p.Items = append(p.Items, Item{Src: t})
	}
	if err := p.fold(); err != nil {
		return nil, err
	}
	if err := p.layout(); err != nil {
		return p, err
	}
	return p, p.checkExpand(r)
}

func (p *Plan) fold() error {
	if !p.opts.FoldWeightNorm {
		return nil
	}
	ts := make([]*pth.Tensor, len(p.Items))
	for i, it := range p.Items {
		ts[i] = it.Src
	}
	out, n, err := pth.FoldWeightNorm(ts)
	if err != nil {
		return err
	}
	p.Folded, p.Items = n, p.Items[:0]
	for _, t := range out {
		p.Items = append(p.Items, Item{Src: t})
	}
	return nil
}

// layout picks each output dtype and plans the file.
func (p *Plan) layout() error {
	for i := range p.Items {
		it := &p.Items[i]
		it.Out = outDType(it.Src.DType, p.opts.DType)
		if !it.Out.Valid() {
			return fmt.Errorf("%w: tensor %q is %s: leave it out with --drop '^%s$'", ErrDType, it.Src.Name, it.Src.DType, regexp.QuoteMeta(it.Src.Name))
		}
	}
	var err error
	p.Layout, err = safetensors.Plan(p.headers(), p.metadata(strings.Repeat("0", 64)))
	return err
}

func (p *Plan) headers() []safetensors.TensorHeader {
	hs := make([]safetensors.TensorHeader, len(p.Items))
	for i, it := range p.Items {
		hs[i] = safetensors.TensorHeader{Name: it.Src.Name, DType: it.Out, Shape: it.Src.Shape}
	}
	return hs
}

func (p *Plan) metadata(sum string) map[string]string {
	origin := "computed"
	if p.opts.SourceSHA256 != "" {
		origin = "given"
	}
	m := map[string]string{
		"format":                   "pt",
		"source":                   p.name,
		"source_sha256":            sum,
		"source_sha256_origin":     origin,
		"convert.dtype":            string(p.opts.DType),
		"convert.fold_weight_norm": strconv.FormatBool(p.opts.FoldWeightNorm),
		"convert.strip_prefix":     p.opts.StripPrefix,
		"convert.folded":           strconv.Itoa(p.Folded),
	}
	if p.opts.Drop != nil {
		m["convert.drop"] = p.opts.Drop.String()
	}
	return m
}

// outDType maps a source dtype through the target.
func outDType(d pth.DType, t Target) safetensors.DType {
	switch d {
	case pth.F64, pth.F32, pth.F16, pth.BF16:
		switch t {
		case F16:
			return safetensors.F16
		case BF16:
			return safetensors.BF16
		case F32:
			return safetensors.F32
		}
	}
	return safetensors.DType(d.String())
}

// buffers are one worker's chunk buffers.
type buffers struct {
	in, out []byte
	f       []float32
}

var bufPool = sync.Pool{New: func() any {
	return &buffers{in: make([]byte, ChunkSize), out: make([]byte, ChunkSize/2), f: make([]float32, ChunkSize/8)}
}}

// writeTensor streams item i to w at its planned place, casting floats when
// the output dtype differs, gathering a strided view, or folding; each
// chunk written is handed to flush, which sends it on to the disk.
func (p *Plan) writeTensor(ctx context.Context, i int, w *os.File, flush *flusher, at int64) error {
	it := p.Items[i]
	t := it.Src
	in, out := int64(t.DType.Size()), int64(it.Out.Size())
	same := t.DType.String() == string(it.Out)
	elems := int64(ChunkSize) / in
	if !same {
		elems = ChunkSize / 8
	}
	b := bufPool.Get().(*buffers)
	defer bufPool.Put(b)
	for e := int64(0); e < t.Numel(); e += elems {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(elems, t.Numel()-e)
		src, dst := b.in[:n*in], b.in[:n*in]
		if _, err := t.ReadAt(src, e*in); err != nil {
			return err
		}
		if !same {
			dst = b.out[:n*out]
			cast(dst, src, t.DType, it.Out, b.f[:n])
		}
		if _, err := w.WriteAt(dst, at+e*out); err != nil {
			return fmt.Errorf("convert: write tensor %q: %w", t.Name, err)
		}
		flush.send(at+e*out, int64(len(dst)))
		if p.opts.Progress != nil {
			p.opts.Progress(int64(len(dst)))
		}
	}
	return nil
}

// cast converts little-endian float elements of dtype from into to,
// through float32 (exact for every source but F64, which rounds once).
func cast(dst, src []byte, from pth.DType, to safetensors.DType, f []float32) {
	switch {
	case from == pth.F32 && to == safetensors.F16:
		f32ToF16(dst, src)
		return
	case from == pth.F32 && to == safetensors.BF16:
		f32ToBF16(dst, src)
		return
	}
	switch from {
	case pth.F32:
		for i := range f {
			f[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case pth.F64:
		for i := range f {
			f[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		}
	case pth.F16:
		dtype.DecodeF16(f, src)
	case pth.BF16:
		dtype.DecodeBF16(f, src)
	}
	switch to {
	case safetensors.F16:
		dtype.EncodeF16(dst, f)
	case safetensors.BF16:
		dtype.EncodeBF16(dst, f)
	case safetensors.F32:
		for i, x := range f {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
		}
	}
}

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
