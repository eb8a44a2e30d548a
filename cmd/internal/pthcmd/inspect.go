package pthcmd

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/pth"
)

// codecPrefix is the prefix training checkpoints put before the codec's keys.
const codecPrefix = "generator."

// InspectOptions are the inputs of `drama pth inspect`.
type InspectOptions struct {
	F      *cmdutil.Factory
	File   string
	Verify bool
}

// NewCmdInspect returns `drama pth inspect`.
func NewCmdInspect(f *cmdutil.Factory, runF func(context.Context, *InspectOptions) error) *cobra.Command {
	opts := &InspectOptions{F: f}
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "List a checkpoint's tensors and recognise the Drama codec",
		Long: strings.TrimSpace(`
Print a torch.save checkpoint's format, archive prefix, tensor count, bytes
and dtypes, then each tensor's name, dtype and shape. Only the zip directory
and the pickle are read. When the keys are the Drama codec's (after the
"generator." prefix of training checkpoints), print its geometry, or the
keys that are missing, unexpected or of another shape. With --verify, every
record is read and checked against its CRC-32 (exit 3 on a mismatch).`),
		Example: "$ drama pth inspect codec.pth\n$ drama pth inspect codec.pth --verify --json | jq .codec.geometry",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runInspect(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Verify, "verify", false, "read every record and check its CRC-32")
	return cmd
}

// Summary is the JSON document of `drama pth inspect --json`.
type Summary struct {
	File        string          `json:"file"`
	Format      pth.Format      `json:"format"`
	Prefix      string          `json:"prefix,omitempty"`
	Version     int             `json:"version,omitempty"`
	Container   string          `json:"container,omitempty"`
	PickleBytes int64           `json:"pickle_bytes"`
	TensorCount int             `json:"tensor_count"`
	TensorBytes int64           `json:"tensor_bytes"`
	Storages    int             `json:"storages"`
	DTypes      map[string]int  `json:"dtypes"`
	Skipped     []string        `json:"skipped,omitempty"`
	Tensors     []TensorSummary `json:"tensors"`
	Codec       pth.CodecReport `json:"codec"`
	// ChecksumsVerified counts the records checked by --verify.
	ChecksumsVerified *int `json:"checksums_verified,omitempty"`
}

// TensorSummary describes one tensor.
type TensorSummary struct {
	Name       string  `json:"name"`
	DType      string  `json:"dtype"`
	Shape      []int64 `json:"shape"`
	Bytes      int64   `json:"bytes"`
	Contiguous bool    `json:"contiguous"`
	Storage    string  `json:"storage"`
}

func summarize(file string, r *pth.Reader) *Summary {
	s := &Summary{File: file, Format: r.Format, Prefix: r.Prefix, Version: r.Version, Container: r.Container,
		PickleBytes: r.PickleSize, TensorCount: len(r.Tensors), Storages: len(r.Storages), DTypes: map[string]int{},
		Skipped: r.Skipped, Tensors: []TensorSummary{}}
	for _, t := range r.Tensors {
		s.TensorBytes += t.Len()
		s.DTypes[t.DType.String()]++
		s.Tensors = append(s.Tensors, TensorSummary{Name: t.Name, DType: t.DType.String(), Shape: t.Shape,
			Bytes: t.Len(), Contiguous: t.Contiguous(), Storage: t.Storage.Key})
	}
	s.Codec = pth.CheckCodec(pth.StripPrefix(r.Tensors, codecPrefix))
	return s
}

func runInspect(ctx context.Context, opts *InspectOptions) error {
	r, err := openCheckpoint(opts.File)
	if err != nil {
		return err
	}
	defer r.Close()
	s := summarize(opts.File, &r.Reader)
	if opts.Verify {
		n, err := r.VerifyChecksums(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return cmdutil.MismatchError(err)
		}
		s.ChecksumsVerified = &n
	}
	if opts.F.Global.JSON {
		return cmdutil.WriteJSON(opts.F.IO.Out, s)
	}
	printSummary(opts.F, s)
	t := cmdutil.NewTable(opts.F.IO, "name", "dtype", "shape")
	for _, x := range s.Tensors {
		t.AddRow(x.Name, x.DType, shapeString(x.Shape))
	}
	return t.Render()
}

func printSummary(f *cmdutil.Factory, s *Summary) {
	w := f.IO.Out
	fmt.Fprintf(w, "format:   %s", s.Format)
	if s.Prefix != "" {
		fmt.Fprintf(w, " (archive prefix %q, version %d)", s.Prefix, s.Version)
	}
	fmt.Fprintf(w, "\ntensors:  %d in %d storages, %s (%d bytes)\n", s.TensorCount, s.Storages, cmdutil.HumanBytes(s.TensorBytes), s.TensorBytes)
	var dts []string
	for _, d := range slices.Sorted(maps.Keys(s.DTypes)) {
		dts = append(dts, fmt.Sprintf("%s x%d", d, s.DTypes[d]))
	}
	fmt.Fprintf(w, "dtypes:   %s\n", strings.Join(dts, ", "))
	if s.Container != "" {
		fmt.Fprintf(w, "found in: %q of the checkpoint dictionary\n", s.Container)
	}
	printCodec(f, s.Codec)
	if s.ChecksumsVerified != nil {
		fmt.Fprintf(w, "checksums: %d records match their CRC-32\n", *s.ChecksumsVerified)
	}
	fmt.Fprintln(w)
}

func printCodec(f *cmdutil.Factory, c pth.CodecReport) {
	w := f.IO.Out
	if !c.Recognized {
		fmt.Fprintln(w, "codec:    not the Drama codec (its keys are not there)")
		return
	}
	g := c.Geometry
	state := "complete"
	if !c.Complete {
		state = fmt.Sprintf("%d missing, %d unexpected, %d of another shape", len(c.Missing), len(c.Unexpected), len(c.Mismatched))
	}
	fmt.Fprintf(w, "codec:    Drama codec (%s): %d Hz, %d samples a frame (%.3f frames/s), codebooks %s\n",
		state, g.SampleRate, g.FrameSamples, g.FrameRate, codebooks(g.Codebooks))
	fmt.Fprintf(w, "          encoder rates %v, quantizer downsample %v, decoder rates %v\n", g.EncoderRates, g.Downsample, g.DecoderRates)
	for _, k := range c.Missing {
		fmt.Fprintf(w, "          missing: %s\n", safetext.Escape(k))
	}
	for _, k := range c.Unexpected {
		fmt.Fprintf(w, "          unexpected: %s\n", safetext.Escape(k))
	}
	for _, k := range c.Mismatched {
		fmt.Fprintf(w, "          shape: %s\n", safetext.Escape(k))
	}
}

// codebooks writes sizes like "1 x 4096 + 9 x 1024".
func codebooks(sizes []int) string {
	var parts []string
	for i := 0; i < len(sizes); {
		j := i
		for j < len(sizes) && sizes[j] == sizes[i] {
			j++
		}
		parts = append(parts, fmt.Sprintf("%d x %d", j-i, sizes[i]))
		i = j
	}
	return strings.Join(parts, " + ")
}

func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
