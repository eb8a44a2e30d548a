package voicecmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// CheckOptions are the inputs of `drama voice check`.
type CheckOptions struct {
	F         *cmdutil.Factory
	Files     []string
	Tokenizer string
}

// NewCmdCheck returns `drama voice check`.
func NewCmdCheck(f *cmdutil.Factory, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{F: f}
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Check voice files against their format's rules",
		Long: strings.TrimSpace(`
Check each voice file against every rule of its format: fields, reference
count, frames, code ranges, codes_sha256, transcripts, id, consent and size.
Prints one row a file (status, canonical form, format, id, file) and each
problem on standard error. Transcripts are checked against the special tokens
of --tokenizer (a tokenizer.json) when given, else a built-in list.

Exit status 3 when any file is invalid; 2 when a FILE is not there (a
pattern the shell matched to no file).`),
		Example: strings.TrimSpace(`
$ drama voice check voices/*.json
$ drama voice check anna.json --tokenizer tokenizer.json --json`),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCheck(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Tokenizer, "tokenizer", "", "tokenizer.json whose added tokens transcripts must not contain")
	return cmd
}

// checkResult is the --json output of `drama voice check`.
type checkResult struct {
	Files   []*fileReport `json:"files"`
	Valid   int           `json:"valid"`
	Invalid int           `json:"invalid"`
}

func runCheck(_ context.Context, opts *CheckOptions) error {
	f := opts.F
	for _, a := range opts.Files {
		if _, err := os.Stat(a); errors.Is(err, fs.ErrNotExist) {
			why := ""
			if strings.ContainsAny(a, "*?[") {
				why = " (no file matches the pattern)"
			}
			return cmdutil.FlagErrorf("%s: no such file%s: name voice files that exist", a, why)
		}
	}
	vopts, err := loadOptions(opts.Tokenizer)
	if err != nil {
		return err
	}
	res := checkResult{Files: inspectAll(opts.Files, vopts)}
	for _, r := range res.Files {
		if r.Valid {
			res.Valid++
		} else {
			res.Invalid++
		}
	}
	if err := printCheck(f, &res); err != nil {
		return err
	}
	if res.Invalid > 0 {
		return cmdutil.MismatchError(fmt.Errorf("%d of %d voice files invalid", res.Invalid, len(res.Files)))
	}
	return nil
}

func printCheck(f *cmdutil.Factory, res *checkResult) error {
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, res)
	}
	t := cmdutil.NewTable(f.IO, "status", "canonical", "format", "id", "references", "seconds", "file")
	for _, r := range res.Files {
		status := "ok"
		if !r.Valid {
			status = "invalid"
			printProblems(f, r)
		}
		t.AddRow(status, yesNo(r.Canonical), dash(r.Format), dash(r.ID), strconv.Itoa(r.References), fmt.Sprintf("%.2f", r.Seconds), r.File)
	}
	return t.Render()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
