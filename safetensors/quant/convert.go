package quant

import (
	"context"
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/drama-tts/drama/safetensors"
)

// Target is what routed experts are converted to.
type Target string

// The conversion targets.
const (
	ToNVFP4    Target = "nvfp4"     // NVFP4, 16-element E4M3 block scales and an F32 global scale
	ToFP8Block Target = "fp8-block" // F8_E4M3 with one F32 scale per 128x128 block
	ToBF16     Target = "bf16"      // dequantized, for checks
)

// Layout is the tensor naming of an NVFP4 output.
type Layout string

// The NVFP4 layouts.
const (
	LayoutModelOpt          Layout = "modelopt"
	LayoutCompressedTensors Layout = "compressed-tensors"
)

// Options control Quantize.
type Options struct {
	Target Target
	Layout Layout  // for ToNVFP4; "" means modelopt
	Recipe *Recipe // nil means DefaultRecipe
	Keep   KeepList
	// Workers is how many conversions (or pass-through copies) are in
	// flight at once over all shards together; 0 means GOMAXPROCS. Fewer
	// run when that many would not fit in a fixed memory bound (96 MiB of
	// inputs, intermediate values and outputs).
	Workers int
	// F32Intermediate skips the BF16 rounding of dequantized FP8 sources
	// (the reference tools round to BF16 before quantizing again).
	F32Intermediate bool
	// Progress is called with output data bytes written so far and the total.
	Progress func(done, total int64)
	// MaxNMSE, when positive, makes Check fail a projection whose
	// normalized mean squared error is above it.
	MaxNMSE float64
}

// Result summarizes a conversion.
type Result struct {
	Shards      []string `json:"shards"`
	Converted   int      `json:"converted"`   // expert projections converted
	PassThrough int      `json:"passthrough"` // tensors copied byte for byte
	Pruned      int      `json:"pruned"`      // experts dropped
	Kept        int      `json:"kept"`        // experts kept
	BytesIn     int64    `json:"bytes_in"`    // tensor bytes of the input
	BytesOut    int64    `json:"bytes_out"`   // tensor bytes of the output
	Keep        KeepList `json:"drama_experts,omitempty"`
	// FP8PassThrough counts F8_E4M3 tensors outside the routed experts that
	// were copied as they are: the rewritten quantization_config no longer
	// describes them.
	FP8PassThrough int `json:"fp8_passthrough,omitempty"`
}

// ErrNoExperts matches a checkpoint in which the recipe finds no routed
// expert, so there would be nothing to convert.
var ErrNoExperts = errors.New("quant: no routed experts found")

// ErrOutputExists matches an output directory that already holds files.
var ErrOutputExists = errors.New("quant: output directory is not empty")

// Quantize converts the checkpoint in inDir into outDir: routed experts (by
// opts.Recipe) to opts.Target, pruned experts dropped, every other tensor
// copied byte for byte, shards named as in the input, the index and config
// rewritten and other files copied. Everything is written into a temporary
// directory beside outDir and renamed into place at the end, so a failure
// leaves nothing behind. outDir must not exist or be empty.
func Quantize(ctx context.Context, inDir, outDir string, opts Options) (*Result, error) {
	in, err := opts.open(inDir)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	p, err := plan(in, &opts)
	if err != nil {
		return nil, err
	}
	if err := checkOutDir(outDir); err != nil {
		return nil, err
	}
	tmp, err := atomicfile.TempDir(outDir)
	if err != nil {
		return nil, fmt.Errorf("quant: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := p.write(ctx, tmp, &opts); err != nil {
		return nil, err
	}
	if err := finishDir(inDir, tmp, p, &opts); err != nil {
		return nil, err
	}
	if err := atomicfile.RenameDir(tmp, outDir); err != nil { // outDir is empty or absent, checked above
		return nil, fmt.Errorf("quant: %w", err)
	}
	return p.result, nil
}

func (o *Options) normalize() error {
	if o.Recipe == nil {
		o.Recipe = DefaultRecipe()
	}
	if o.Layout == "" {
		o.Layout = LayoutModelOpt
	}
	switch {
	case o.Target != ToNVFP4 && o.Target != ToFP8Block && o.Target != ToBF16:
		return fmt.Errorf("quant: unknown target %q (want nvfp4, fp8-block or bf16)", o.Target)
	case o.Layout != LayoutModelOpt && o.Layout != LayoutCompressedTensors:
		return fmt.Errorf("quant: unknown layout %q (want modelopt or compressed-tensors)", o.Layout)
	}
	return nil
}

func checkOutDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("quant: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s holds %d entries; choose a new directory", ErrOutputExists, dir, len(entries))
	}
	return nil
}

// shardPlan is one output shard: its layout and where each tensor comes from.
type shardPlan struct {
	name   string
	layout *safetensors.Layout
	copyOf map[string]*safetensors.Tensor // pass-through tensors by name
	jobOf  map[string]*job                // converted tensors by name
	group  map[*job]int                   // the writer's group of each job
}

// Group puts the outputs of one job (an expert's gate and up, or one
// projection) in one group, so one worker computes and writes them while
// the others work on other jobs; each pass-through tensor is its own group.
func (s *shardPlan) Group(t *safetensors.PlannedTensor) int {
	if j, ok := s.jobOf[t.Name]; ok {
		return s.group[j]
	}
	return -1 - t.Index
}

// planned is the whole conversion, decided before any tensor data is read.
type planned struct {
	shards []*shardPlan
	result *Result
}

// jobMemory bounds the bytes that the jobs in flight hold together (inputs,
// floats and outputs, as job.bytes estimates them): with the garbage
// collector's headroom and the rest of the process, peak RSS stays under
// 256 MiB whatever --workers asks for. A 512x2048 block-FP8 expert's
// gate and up projections hold about 3.2 MiB, so 30 such jobs run at once.
const jobMemory = 96 << 20

// inFlight is how many conversions run at once: workers (GOMAXPROCS when 0),
// but no more than jobMemory holds of the largest job.
func (p *planned) inFlight(workers int) int {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var largest int64 = 1 << 20 // a pass-through copy's buffer
	for _, s := range p.shards {
		for _, j := range s.jobOf {
			largest = max(largest, j.bytes)
		}
	}
	return max(1, min(workers, int(jobMemory/largest)))
}

// shardsAtOnce is how many shards are filled at the same time. A shard's
// slot is given back as soon as its tensors are written, so the next shard
// is converted while the data of the one before go to disk: the sync of
// one shard never leaves the workers idle.
const shardsAtOnce = 2

// shardFilled is called with a shard's name once its tensors are written,
// before its sync (a variable for tests).
var shardFilled = func(string) {}

// write fills every shard in dir, shardsAtOnce shards at once, with at most
// opts.Workers conversions (or pass-through copies) in flight in all of
// them together (fewer when they would not fit in jobMemory): the shards'
// writers share one set of slots. Syncing a shard holds no slot.
func (p *planned) write(ctx context.Context, dir string, opts *Options) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	report := p.progress(opts.Progress)
	workers := p.inFlight(opts.Workers)
	slots := make(chan struct{}, workers)
	sem := make(chan struct{}, shardsAtOnce)
	var wg sync.WaitGroup
	for _, s := range p.shards {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		var once sync.Once
		free := func() { once.Do(func() { <-sem }) }
		wg.Go(func() {
			defer free()
			var last int64
			wo := safetensors.WriteOptions{Workers: workers, Slots: slots, Progress: func(done, _ int64) { report(done - last); last = done },
				Filled: func() { free(); shardFilled(s.name) }}
			if err := s.layout.WriteFile(ctx, filepath.Join(dir, s.name), s, wo); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// progress returns a function adding written bytes to the total reported
// to fn, serialized, so fn sees increasing counts.
func (p *planned) progress(fn func(done, total int64)) func(n int64) {
	var total, done int64
	for _, s := range p.shards {
		total += s.layout.DataSize()
	}
	var mu sync.Mutex
	return func(n int64) {
		if fn == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done += n
		fn(done, total)
	}
}

// WriteTensor produces one output tensor: a copy, or a converted result.
func (s *shardPlan) WriteTensor(ctx context.Context, t *safetensors.PlannedTensor, w io.Writer) error {
	if src, ok := s.copyOf[t.Name]; ok {
		buf := make([]byte, min(src.Size, 1<<20))
		_, err := io.CopyBuffer(w, src.Open(), buf)
		return err
	}
	b, err := s.jobOf[t.Name].take(t.Name)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
