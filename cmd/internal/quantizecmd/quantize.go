// Package quantizecmd implements `drama quantize`.
package quantizecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/safetensors/quant"
)

// Options are the inputs of `drama quantize`.
type Options struct {
	F               *cmdutil.Factory
	In, Out         string
	To              string
	Layout          string
	Experts         string
	RouterStats     string
	Coverage        float64
	Recipe          string
	Workers         int
	Check           bool
	MaxNMSE         float64
	Dequantize      bool
	F32Intermediate bool
}

// NewCmd returns `drama quantize`. runF, if not nil, replaces the run (tests).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "quantize IN_DIR -o OUT_DIR",
		Short: "Make a quantized or pruned variant of a safetensors checkpoint",
		Long: strings.TrimSpace(`
Convert the routed experts of a checkpoint directory and copy everything else
byte for byte. Tensor roles come from a recipe: the default fits Qwen3-MoE
names (model.layers.L.mlp.experts.E.{gate,up,down}_proj.weight, with
weight_scale_inv beside block-FP8 weights, or all experts fused in
experts.gate_up_proj and experts.down_proj, written out per expert);
--recipe FILE overrides it.

--to nvfp4 writes 16-element E4M3 block scales and an F32 global scale, an
expert's gate and up projections sharing one global scale. --layout picks the
tensor names and config: modelopt (weight, weight_scale, weight_scale_2,
hf_quant_config.json) or compressed-tensors (weight_packed, weight_scale,
weight_global_scale). Block-FP8 sources are dequantized with a BF16 step as
the reference tools do (--f32-intermediate skips it). --to fp8-block writes
128x128 block FP8 from BF16; --dequantize writes BF16.

Pruning keeps, per MoE layer, the experts of --experts KEEP.json (an object
of layer -> [expert ids], or an index with metadata.drama_experts), or the
smallest set covering --coverage of the summed router weight in
--router-stats STATS.json (layer -> [weight per expert]). Pruned experts are
never read; the kept list goes into the output index as
metadata.drama_experts.

The output directory must not exist or be empty; it appears only when the
whole conversion succeeded. --check reopens the output and reports each
converted projection's normalized mean squared error, exiting with 3 on NaN,
infinity, a NaN or negative scale byte, differing gate/up scales, or (with
--max-nmse) an error above the bound.`),
		Example: strings.TrimSpace(`
$ drama quantize ~/.local/share/drama/full -o ./nvfp4 --to nvfp4 --experts keep.json --check --max-nmse 0.02
$ drama quantize ./full -o ./pruned --router-stats stats.json --coverage 0.9
$ drama quantize ./bf16 -o ./fp8 --to fp8-block
$ drama quantize ./nvfp4 -o ./back --dequantize --json`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.FlagErrorf("want one IN_DIR argument, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.In = args[0]
			if err := opts.validate(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Out, "output", "o", "", "output directory (must not exist or be empty)")
	fl.StringVar(&opts.To, "to", "nvfp4", "target: nvfp4 or fp8-block")
	fl.StringVar(&opts.Layout, "layout", "modelopt", "NVFP4 tensor names and config: modelopt or compressed-tensors")
	fl.StringVar(&opts.Experts, "experts", "", "keep list: JSON object of layer -> [expert ids]")
	fl.StringVar(&opts.RouterStats, "router-stats", "", "router statistics: JSON object of layer -> [summed weight per expert]")
	fl.Float64Var(&opts.Coverage, "coverage", 0.9, "share of router weight the kept experts cover, in (0, 1] (with --router-stats)")
	fl.StringVar(&opts.Recipe, "recipe", "", "JSON recipe of tensor-name patterns (default: Qwen3-MoE names)")
	fl.IntVar(&opts.Workers, "workers", 0, "conversions in flight at once, over all shards together (0: one per CPU; at most what 96 MiB holds)")
	fl.BoolVar(&opts.Check, "check", false, "reopen the output and report each converted tensor's error")
	fl.Float64Var(&opts.MaxNMSE, "max-nmse", 0, "with --check, fail a tensor whose normalized mean squared error is above this (0: no bound)")
	fl.BoolVar(&opts.Dequantize, "dequantize", false, "write the routed experts as BF16 instead")
	fl.BoolVar(&opts.F32Intermediate, "f32-intermediate", false, "dequantize FP8 sources to float32 without the BF16 rounding")
	_ = cmd.RegisterFlagCompletionFunc("to", cobra.FixedCompletions([]string{"nvfp4", "fp8-block"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("layout", cobra.FixedCompletions([]string{"modelopt", "compressed-tensors"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *Options) validate(cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	switch {
	case o.Out == "":
		return cmdutil.FlagErrorf("-o OUT_DIR is required")
	case o.To != "nvfp4" && o.To != "fp8-block":
		return cmdutil.FlagErrorf("--to %q: want nvfp4 or fp8-block", o.To)
	case o.Dequantize && changed("to"):
		return cmdutil.FlagErrorf("--dequantize and --to exclude each other")
	case o.Layout != "modelopt" && o.Layout != "compressed-tensors":
		return cmdutil.FlagErrorf("--layout %q: want modelopt or compressed-tensors", o.Layout)
	case changed("layout") && (o.To != "nvfp4" || o.Dequantize):
		return cmdutil.FlagErrorf("--layout applies to --to nvfp4 only")
	case o.Experts != "" && o.RouterStats != "":
		return cmdutil.FlagErrorf("--experts and --router-stats exclude each other")
	case changed("coverage") && o.RouterStats == "":
		return cmdutil.FlagErrorf("--coverage needs --router-stats")
	case !(o.Coverage > 0 && o.Coverage <= 1):
		return cmdutil.FlagErrorf("--coverage %v is outside (0, 1]", o.Coverage)
	case o.Workers < 0:
		return cmdutil.FlagErrorf("--workers must be 0 (one per CPU) or more")
	case o.MaxNMSE < 0 || o.MaxNMSE != o.MaxNMSE:
		return cmdutil.FlagErrorf("--max-nmse must be 0 (no bound) or positive")
	case changed("max-nmse") && !o.Check:
		return cmdutil.FlagErrorf("--max-nmse needs --check")
	}
	return nil
}

// quantOptions turns the flags into quant.Options, reading the recipe and
// the keep list or router statistics.
func (o *Options) quantOptions() (quant.Options, error) {
	qo := quant.Options{Target: quant.Target(o.To), Layout: quant.Layout(o.Layout), Workers: o.Workers,
		F32Intermediate: o.F32Intermediate, MaxNMSE: o.MaxNMSE}
	if o.Dequantize {
		qo.Target = quant.ToBF16
	}
	var err error
	if o.Recipe != "" {
		if qo.Recipe, err = quant.LoadRecipe(o.Recipe); err != nil {
			return qo, err
		}
	}
	switch {
	case o.Experts != "":
		qo.Keep, err = quant.ReadKeepList(o.Experts)
	case o.RouterStats != "":
		var st quant.RouterStats
		if st, err = quant.ReadRouterStats(o.RouterStats); err == nil {
			qo.Keep, err = quant.Coverage(st, o.Coverage)
		}
	}
	return qo, err
}

// Output is the JSON document of `drama quantize --json`.
type Output struct {
	Input  string             `json:"input"`
	Output string             `json:"output"`
	Target string             `json:"target"`
	Layout string             `json:"layout,omitempty"`
	Result *quant.Result      `json:"result"`
	Check  *quant.CheckReport `json:"check,omitempty"`
}

// memoryLimit is the soft limit given to the garbage collector while
// quantizing (unless GOMEMLIMIT says otherwise): the conversions in flight
// hold at most about 96 MiB, and collecting before the heap doubles keeps
// peak RSS under 256 MiB even when many cores allocate at once.
const memoryLimit = 160 << 20

// limitMemory sets memoryLimit as the soft memory limit unless GOMEMLIMIT
// is set, and returns a function restoring the previous limit.
func limitMemory() func() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetMemoryLimit(memoryLimit)
	return func() { debug.SetMemoryLimit(old) }
}

func run(ctx context.Context, opts *Options) error {
	defer limitMemory()()
	f := opts.F
	qo, err := opts.quantOptions()
	if err != nil {
		return err
	}
	prog := &progress{f: f}
	qo.Progress = prog.update
	res, err := quant.Quantize(ctx, opts.In, opts.Out, qo)
	prog.finish()
	if err != nil {
		return err
	}
	if res.FP8PassThrough > 0 {
		f.Warnf("%d F8_E4M3 tensors outside the routed experts were copied as they are; the new quantization_config in %s/config.json does not describe them", res.FP8PassThrough, opts.Out)
	}
	out := &Output{Input: opts.In, Output: opts.Out, Target: string(qo.Target), Result: res}
	if qo.Target == quant.ToNVFP4 {
		out.Layout = string(qo.Layout)
	}
	var checkErr error
	if opts.Check {
		f.Infof("checking %s against %s", opts.Out, opts.In)
		out.Check, checkErr = quant.Check(ctx, opts.In, opts.Out, qo)
		if checkErr != nil && !errors.Is(checkErr, quant.ErrCheckFailed) {
			return checkErr
		}
	}
	if err := printOutput(f, out); err != nil {
		return err
	}
	if checkErr != nil {
		return cmdutil.MismatchError(fmt.Errorf("%w: the output is kept in %s for inspection", checkErr, opts.Out))
	}
	return nil
}

// progress shows quant's (done, total) reports on a progress bar made at
// the first report, so a run that fails while planning prints none.
type progress struct {
	f    *cmdutil.Factory
	mu   sync.Mutex
	bar  cmdutil.Progress
	last int64
}

func (p *progress) update(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil {
		p.bar = p.f.NewProgress("quantize", total)
	}
	p.bar.Add(done - p.last)
	p.last = done
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
	}
}

func printOutput(f *cmdutil.Factory, out *Output) error {
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, out)
	}
	r := out.Result
	t := cmdutil.NewTable(f.IO, "field", "value")
	t.AddRow("output", out.Output)
	t.AddRow("target", out.Target+layoutSuffix(out.Layout))
	t.AddRow("converted", fmt.Sprintf("%d expert projections", r.Converted))
	t.AddRow("experts", fmt.Sprintf("%d kept, %d pruned", r.Kept, r.Pruned))
	t.AddRow("passthrough", fmt.Sprintf("%d tensors", r.PassThrough))
	t.AddRow("bytes", fmt.Sprintf("%d in, %d out (%s)", r.BytesIn, r.BytesOut, cmdutil.HumanBytes(r.BytesOut)))
	if c := out.Check; c != nil {
		t.AddRow("check", fmt.Sprintf("%d tensors, %d failed, NMSE mean %.5f max %.5f", len(c.Tensors), c.Failed, c.MeanNMSE, c.MaxNMSE))
		for _, tc := range c.Tensors {
			for _, p := range tc.Problems {
				f.Warnf("%s: %s", tc.Module, p)
			}
		}
	}
	return t.Render()
}

func layoutSuffix(l string) string {
	if l == "" {
		return ""
	}
	return " (" + l + ")"
}
