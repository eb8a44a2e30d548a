package quant

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/drama-tts/drama/safetensors"
)

// ErrCheckFailed matches a Check that found NaN, infinity, a bad scale byte
// or gate and up projections with different global scales.
var ErrCheckFailed = errors.New("quant: check failed")

// TensorCheck is the check of one converted expert projection.
type TensorCheck struct {
	Module   string   `json:"module"`
	Layer    int      `json:"layer"`
	Expert   int      `json:"expert"`
	Format   string   `json:"format"`
	NMSE     float64  `json:"nmse"` // sum((out-src)^2) / sum(src^2)
	Global   float32  `json:"global_scale,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// CheckReport is the result of Check.
type CheckReport struct {
	Tensors  []TensorCheck `json:"tensors"`
	MaxNMSE  float64       `json:"max_nmse"`
	MeanNMSE float64       `json:"mean_nmse"`
	Failed   int           `json:"failed"`
}

// Check reopens the converted checkpoint outDir and compares every converted
// routed-expert projection with its source in inDir: the normalized mean
// squared error of the dequantized output against the dequantized source
// (BF16-rounded unless opts.F32Intermediate), NaN or infinity, scale bytes
// that are NaN or negative, gate/up global scales that differ, and an error
// above opts.MaxNMSE when that is set. It
// returns the report, and an error matching ErrCheckFailed if any
// projection has a problem.
func Check(ctx context.Context, inDir, outDir string, opts Options) (*CheckReport, error) {
	in, err := opts.open(inDir)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	out, err := safetensors.OpenCheckpoint(outDir)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	inMods, _, _, err := collectModules(in, opts.Recipe)
	if err != nil {
		return nil, err
	}
	outMods, order, _, err := collectModules(out, opts.Recipe)
	if err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%w: %s holds no routed-expert tensor that the %q recipe matches; check with the --recipe used to convert it",
			ErrCheckFailed, outDir, opts.Recipe.Name)
	}
	rep := &CheckReport{Tensors: make([]TensorCheck, len(order))}
	err = forEach(ctx, len(order), opts.Workers, func(i int) {
		rep.Tensors[i] = checkProjection(outMods[order[i]], inMods[order[i]], !opts.F32Intermediate)
	})
	if err != nil {
		return nil, err
	}
	return rep, rep.finish(opts.Recipe, opts.MaxNMSE)
}

// open normalizes o, the options of a run, and opens the checkpoint in
// dir, the run's input.
func (o *Options) open(dir string) (*safetensors.Checkpoint, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	return safetensors.OpenCheckpoint(dir)
}

// forEach runs fn(0..n-1) on workers goroutines.
func forEach(ctx context.Context, n, workers int, fn func(i int)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return ctx.Err()
}

func checkProjection(o, src *module, bf16 bool) TensorCheck {
	tc := TensorCheck{Module: o.ref.Module, Layer: o.ref.Layer, Expert: o.ref.Expert}
	if err := o.classify(); err != nil {
		tc.Problems = append(tc.Problems, err.Error())
		return tc
	}
	tc.Format = o.kind.String()
	if src == nil {
		tc.Problems = append(tc.Problems, "no source tensor of that name in the input")
		return tc
	}
	if err := src.classify(); err != nil {
		tc.Problems = append(tc.Problems, "source: "+err.Error())
		return tc
	}
	tc.Problems = append(tc.Problems, scaleProblems(o, &tc)...)
	got, err1 := o.loadFloats(bf16)
	want, err2 := src.loadFloats(bf16)
	if err := errors.Join(err1, err2); err != nil {
		tc.Problems = append(tc.Problems, err.Error())
		return tc
	}
	tc.NMSE = nmse(got, want)
	return tc
}

// scaleProblems checks an output's scales: E4M3 block scales neither NaN nor
// negative, global scales and FP8 block scales finite and positive.
func scaleProblems(o *module, tc *TensorCheck) []string {
	var ps []string
	switch o.kind {
	case srcNVFP4, srcNVFP4CT:
		q, err := o.loadNVFP4()
		if err != nil {
			return []string{err.Error()}
		}
		tc.Global = q.Global
		if !(q.Global > 0) || q.Global > math.MaxFloat32 {
			ps = append(ps, fmt.Sprintf("global scale %v is not finite and positive", q.Global))
		}
		for i, s := range q.Scales {
			if s&0x7F == 0x7F || s&0x80 != 0 {
				ps = append(ps, fmt.Sprintf("block scale %d (row %d) is byte 0x%02X: NaN or negative", i, i/(o.cols/GroupSize), s))
				break
			}
		}
	case srcFP8:
		if _, err := o.loadFP8(); err != nil {
			ps = append(ps, err.Error())
		}
	}
	return ps
}

func nmse(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return num / den
}

// finish sorts the report, adds the gate/up global scale check and the
// summary, and returns ErrCheckFailed when anything failed.
func (r *CheckReport) finish(rc *Recipe, maxNMSE float64) error {
	sort.Slice(r.Tensors, func(i, j int) bool { return lessModule(r.Tensors[i], r.Tensors[j]) })
	globals := map[string][]int{}
	for i, t := range r.Tensors {
		ref, _ := rc.Expert(t.Module + ".weight")
		if ref.Proj == rc.Gate || ref.Proj == rc.Up {
			globals[ref.parent()] = append(globals[ref.parent()], i)
		}
	}
	for _, idx := range globals {
		if len(idx) == 2 && r.Tensors[idx[0]].Global != r.Tensors[idx[1]].Global {
			for _, i := range idx {
				r.Tensors[i].Problems = append(r.Tensors[i].Problems, "gate and up global scales differ")
			}
		}
	}
	for i, t := range r.Tensors {
		if maxNMSE > 0 && t.NMSE > maxNMSE {
			r.Tensors[i].Problems = append(r.Tensors[i].Problems, fmt.Sprintf("NMSE %.5f is above the bound %g", t.NMSE, maxNMSE))
			t = r.Tensors[i]
		}
		r.MaxNMSE = max(r.MaxNMSE, t.NMSE)
		r.MeanNMSE += t.NMSE / float64(len(r.Tensors))
		if len(t.Problems) > 0 || math.IsNaN(t.NMSE) || math.IsInf(t.NMSE, 0) {
			r.Failed++
		}
	}
	if r.Failed > 0 {
		return fmt.Errorf("%w: %d of %d converted projections have problems", ErrCheckFailed, r.Failed, len(r.Tensors))
	}
	return nil
}

func lessModule(a, b TensorCheck) bool {
	if a.Layer != b.Layer {
		return a.Layer < b.Layer
	}
	if a.Expert != b.Expert {
		return a.Expert < b.Expert
	}
	return a.Module < b.Module
}
