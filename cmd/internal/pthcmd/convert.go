package pthcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pth/convert"
)

// ConvertOptions are the inputs of `drama pth convert`.
type ConvertOptions struct {
	F              *cmdutil.Factory
	File           string
	Output         string
	DType          string
	FoldWeightNorm bool
	StripPrefix    string
	Drop           string
	Workers        int
	Force          bool
	SourceSHA256   string
	AllowExpand    bool
	// Given is the flags given on the command line, repeated in advice.
	Given []string
}

// NewCmdConvert returns `drama pth convert`.
func NewCmdConvert(f *cmdutil.Factory, runF func(context.Context, *ConvertOptions) error) *cobra.Command {
	opts := &ConvertOptions{F: f}
	cmd := &cobra.Command{
		Use:   "convert FILE -o OUT.safetensors",
		Short: "Convert a checkpoint to safetensors",
		Long: strings.TrimSpace(`
Write a checkpoint's tensors as a safetensors file. Tensors are streamed
with parallel positioned reads and writes into a temporary file beside OUT,
which is synced and renamed into place; memory stays small whatever the
file's size. Floating-point tensors keep their dtype or are cast (f16 and
bf16 round to nearest, ties to even, as torch does); integer, boolean and
FP8 tensors are kept. The output's metadata records the source's sha256 and
these options.

A checkpoint whose views would write more than twice its storages' bytes
(stride-0 broadcasts and other overlapping views; a cast to a wider dtype
does not count) is refused unless --allow-expand is given, and the output's
file system must have room for the whole file before a byte is written.`),
		Example: strings.Join([]string{
			"$ drama pth convert codec.pth -o codec.safetensors",
			"$ drama pth convert codec.pth -o codec-f16.safetensors --fold-weight-norm --dtype f16",
			"$ drama pth convert ckpt.pth -o codec.safetensors --drop '^discriminator\\.'",
		}, "\n"),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			opts.Given = cmdutil.GivenFlags(cmd)
			if opts.Output == "" {
				return cmdutil.FlagErrorf("-o OUT.safetensors is required")
			}
			switch convert.Target(opts.DType) {
			case convert.Keep, convert.F16, convert.BF16, convert.F32:
			default:
				return cmdutil.FlagErrorf("--dtype %q: want keep, f16, bf16 or f32", opts.DType)
			}
			if _, err := regexp.Compile(opts.Drop); err != nil {
				return cmdutil.FlagErrorf("--drop: %v", err)
			}
			if s := opts.SourceSHA256; s != "" && (len(s) != 64 || strings.Trim(s, "0123456789abcdef") != "") {
				return cmdutil.FlagErrorf("--source-sha256 %q: want 64 lower-case hex digits", s)
			}
			if opts.Workers < 0 {
				return cmdutil.FlagErrorf("--workers %d: want 0 (one per CPU) or more", opts.Workers)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runConvert(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Output, "output", "o", "", "safetensors file to write")
	fl.StringVar(&opts.DType, "dtype", "keep", "floating-point output dtype: keep, f16, bf16 or f32")
	fl.BoolVar(&opts.FoldWeightNorm, "fold-weight-norm", false, "fold weight-norm pairs (weight_g/weight_v, parametrizations.weight.original0/1) into weight, in FP32")
	fl.StringVar(&opts.StripPrefix, "strip-prefix", codecPrefix, "when any name starts with this prefix, keep only those tensors, without it (\"\" to keep every name)")
	fl.StringVar(&opts.Drop, "drop", "", "drop tensors whose name (after --strip-prefix) matches this regular expression")
	fl.IntVar(&opts.Workers, "workers", 0, "tensors written at once (0: one per CPU)")
	fl.BoolVar(&opts.Force, "force", false, "replace OUT if it exists")
	fl.BoolVar(&opts.AllowExpand, "allow-expand", false, "write views that repeat their storages' bytes even past twice the checkpoint's storage size")
	fl.StringVar(&opts.SourceSHA256, "source-sha256", "", "the source's sha256 when already verified (drama verify): recorded without hashing FILE again")
	_ = cmd.RegisterFlagCompletionFunc("dtype", cobra.FixedCompletions([]string{"keep", "f16", "bf16", "f32"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// ConvertResult is the JSON document of `drama pth convert --json`.
type ConvertResult struct {
	Source       string   `json:"source"`
	SourceSHA256 string   `json:"source_sha256"`
	Output       string   `json:"output"`
	Tensors      int      `json:"tensors"`
	Bytes        int64    `json:"bytes"`
	DType        string   `json:"dtype"`
	Folded       int      `json:"folded"`
	Dropped      []string `json:"dropped"`
	// ReflinkedBytes are output bytes that share the source's blocks (a
	// reflink: the file system copied nothing), when there are any.
	ReflinkedBytes int64 `json:"reflinked_bytes,omitempty"`
}

func runConvert(ctx context.Context, opts *ConvertOptions) error {
	if err := checkOutput(opts); err != nil {
		return err
	}
	r, err := openCheckpoint(opts.File)
	if err != nil {
		return err
	}
	defer r.Close()
	fi, err := os.Stat(opts.File)
	if err != nil {
		return err
	}
	src, err := os.Open(opts.File)
	if err != nil {
		return err
	}
	defer src.Close()
	co := convert.Options{DType: convert.Target(opts.DType), FoldWeightNorm: opts.FoldWeightNorm,
		StripPrefix: opts.StripPrefix, Workers: opts.Workers, SourceSHA256: opts.SourceSHA256, AllowExpand: opts.AllowExpand}
	if opts.Drop != "" {
		co.Drop = regexp.MustCompile(opts.Drop)
	}
	var bar cmdutil.Progress
	co.Progress = func(n int64) { bar.Add(n) }
	plan, err := convert.New(&r.Reader, src, fi.Size(), fi.Name(), co)
	if ee := (*convert.ExpandError)(nil); errors.As(err, &ee) {
		ee.Source = opts.File // the path as given, not its base name
		return cmdutil.MismatchError(fmt.Errorf("%w; if this checkpoint is trusted and the size meant, run %s", err, expandHint(opts)))
	}
	if err != nil {
		return cmdutil.MismatchError(err)
	}
	if err := plan.CheckSpace(opts.Output); err != nil {
		return fmt.Errorf("%w: free some space or write elsewhere with -o", err)
	}
	bar = opts.F.NewProgress("convert", plan.Layout.DataSize())
	err = plan.Write(ctx, opts.Output)
	bar.Finish()
	if err != nil {
		return err
	}
	return report(opts, plan)
}

// expandHint is the user's command line with --allow-expand added.
func expandHint(opts *ConvertOptions) string {
	given := opts.Given
	if given == nil {
		given = []string{"--output", opts.Output}
	}
	return opts.F.Suggest(append([]string{"pth", "convert", opts.File}, cmdutil.WithFlag(given, "--allow-expand", "true")...)...)
}

// checkOutput refuses to overwrite the input or, without --force, any file.
func checkOutput(opts *ConvertOptions) error {
	out, err := os.Stat(opts.Output)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if in, err := os.Stat(opts.File); err == nil && os.SameFile(in, out) {
		return cmdutil.FlagErrorf("output %s is the input file: choose another -o", opts.Output)
	}
	if !opts.Force {
		return cmdutil.FlagErrorf("output %s exists: remove it or pass --force", opts.Output)
	}
	return nil
}

func report(opts *ConvertOptions, plan *convert.Plan) error {
	res := ConvertResult{Source: opts.File, SourceSHA256: plan.Layout.Metadata["source_sha256"], Output: opts.Output,
		Tensors: len(plan.Items), Bytes: plan.Layout.Size, DType: opts.DType, Folded: plan.Folded, Dropped: plan.Dropped,
		ReflinkedBytes: plan.Reflinked}
	if res.Dropped == nil {
		res.Dropped = []string{}
	}
	if opts.F.Global.JSON {
		return cmdutil.WriteJSON(opts.F.IO.Out, res)
	}
	opts.F.Infof("wrote %s: %d tensors, %s; folded %d weight-norm pairs, dropped %d tensors; source sha256 %s",
		res.Output, res.Tensors, cmdutil.HumanBytes(res.Bytes), res.Folded, len(res.Dropped), res.SourceSHA256)
	if res.ReflinkedBytes > 0 {
		opts.F.Infof("reflinked %s of it: those blocks are shared with %s (copy on write), not copied", cmdutil.HumanBytes(res.ReflinkedBytes), res.Source)
	}
	fmt.Fprintln(opts.F.IO.Out, res.Output)
	return nil
}
