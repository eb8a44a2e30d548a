package benchcmd

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/bench"
)

// CompareOptions are the inputs of `drama bench compare`.
type CompareOptions struct {
	F    *cmdutil.Factory
	A, B string
}

// NewCmdCompare returns `drama bench compare`.
func NewCmdCompare(f *cmdutil.Factory, runF func(context.Context, *CompareOptions) error) *cobra.Command {
	opts := &CompareOptions{F: f}
	return &cobra.Command{
		Use:   "compare A.json B.json",
		Short: "Set two bench reports side by side",
		Long: strings.TrimSpace(`
Print the warm figures of two report.json files side by side with the ratio
B/A. A median counts as changed (slower or faster) when the ranges of its
per-pass medians over the warm passes of A and of B do not overlap, each
range widened by 2 % of its value (for times at least 2 ms) to allow for
timer resolution: the difference is then larger than the spread between
passes of the same run. Otherwise it is "same", whatever the ratio.

When both runs had a transcriber (drama bench --transcribe-url), the word
error rates follow (figure wer, in percent): over all warm whole replies,
per voice, and per text where the two differ, "worse" or "better" when the
rates of the warm passes of A and of B do not overlap, else "same".`),
		Example: strings.TrimSpace(`
$ drama bench compare bench-a/report.json bench-b/report.json
$ drama bench compare old.json new.json --json`),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.A, opts.B = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCompare(opts)
		},
	}
}

func runCompare(opts *CompareOptions) error {
	f := opts.F
	a, err := bench.ReadReport(opts.A)
	if err != nil {
		return err
	}
	b, err := bench.ReadReport(opts.B)
	if err != nil {
		return err
	}
	if a.Corpus.SHA256 != b.Corpus.SHA256 {
		f.Warnf("the reports spoke different corpora (%s %.12s, %s %.12s): the figures may not be comparable", a.Corpus.Name, a.Corpus.SHA256, b.Corpus.Name, b.Corpus.SHA256)
	}
	rows := bench.Compare(a, b)
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, map[string]any{"a": opts.A, "b": opts.B, "rows": rows})
	}
	t := cmdutil.NewTable(f.IO, "mode", "group", "figure", "A", "B", "B/A", "change")
	changed := 0
	for _, r := range rows {
		ratio := "n/a"
		if !math.IsNaN(r.Ratio) && (r.Figure != bench.FigureWER || r.A > 0) {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		if r.Changed {
			changed++
		}
		a, b := fmt.Sprintf("%.3f", r.A), fmt.Sprintf("%.3f", r.B)
		if r.Figure == bench.FigureWER {
			a, b = bench.Percent(r.A), bench.Percent(r.B)
		}
		t.AddRow(r.Mode, r.Group, r.Figure, a, b, ratio, r.Verdict)
	}
	if err := t.Render(); err != nil {
		return err
	}
	f.Infof("%d figures changed beyond the run-to-run spread", changed)
	return nil
}
