package pinscmd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/pins"
)

// ShowOptions are the inputs of `drama pins show`.
type ShowOptions struct {
	F          *cmdutil.Factory
	PinsFile   string
	VariantSet bool
}

// NewCmdShow returns `drama pins show`.
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{F: f}
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print a variant's pins",
		Long: strings.TrimSpace(`
Print the pins of a variant: repository, revision, licence, engine, serve
flags, memory estimate, and each file's size and sha256. The pins come from
--pins, else the root's lock file for the variant, else the built-in pins.`),
		Example: strings.TrimSpace(`
$ drama pins show --variant nvfp4
$ drama pins show --pins my.pins.json --json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.VariantSet = cmd.Flags().Changed("variant")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runShow(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.PinsFile, "pins", "", "pins file to show")
	return cmd
}

func runShow(_ context.Context, opts *ShowOptions) error {
	f := opts.F
	p, err := cmdutil.LoadPins(f, opts.PinsFile, opts.VariantSet, pins.ForInstalled)
	if err != nil {
		return err
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, p)
	}
	if f.IO.IsStdoutTTY() {
		printSummary(f.IO.Out, p)
		if len(p.Files) > 0 {
			t := cmdutil.NewTable(f.IO, "path", "size", "sha256")
			for _, file := range p.Files {
				t.AddRow(file.Path, fmt.Sprint(file.Size), file.SHA256)
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
	} else if err := printFields(f, p); err != nil {
		return err
	}
	if !p.Complete() {
		f.Infof("these pins are incomplete (no per-file digests yet): run %s", f.Suggest("pins", "lock", "--variant", p.Variant, "--pins", opts.PinsFile))
	}
	return nil
}

// field is one of the pins' fields as pins show and pins diff print it.
type field struct{ name, value string }

func fields(p *pins.Pins) []field {
	out := []field{
		{"variant", p.Variant}, {"repo", p.Repo}, {"revision", p.Revision}, {"license", p.License},
		{"engine", p.Engine}, {"serve_flags", strings.Join(p.ServeFlags, " ")},
		{"memory_gib", strconv.FormatFloat(p.MemoryGiB, 'f', -1, 64)},
		{"files", strconv.Itoa(len(p.Files))}, {"bytes", strconv.FormatInt(p.TotalBytes(), 10)},
	}
	if p.ExpectedFiles > 0 {
		out = append(out, field{"expected_files", strconv.Itoa(p.ExpectedFiles)})
	}
	if p.ExpectedBytes > 0 {
		out = append(out, field{"expected_bytes", strconv.FormatInt(p.ExpectedBytes, 10)},
			field{"expected_bytes_of", strings.Join(p.ExpectedBytesOf, " ")})
	}
	return out
}

// printFields writes the pins off a terminal: a "NAME<TAB>VALUE" row per
// field, then a "file<TAB>PATH<TAB>SIZE<TAB>SHA256" row per file.
func printFields(f *cmdutil.Factory, p *pins.Pins) error {
	t := cmdutil.NewTable(f.IO)
	for _, fl := range fields(p) {
		t.AddRow(fl.name, fl.value)
	}
	for _, file := range p.Files {
		t.AddRow("file", file.Path, fmt.Sprint(file.Size), file.SHA256)
	}
	return t.Render()
}

// printSummary writes the pins for people; a pins file is outside text,
// escaped (safetext.Escape).
func printSummary(w io.Writer, p *pins.Pins) {
	e := safetext.Escape
	fmt.Fprintf(w, "variant:   %s\nrepo:      %s@%s\nlicence:   %s\nengine:    %s\n", e(p.Variant), e(p.Repo), p.Revision, e(p.License), e(p.Engine))
	fmt.Fprintf(w, "flags:     %s\nmemory:    %.1f GiB\n", e(strings.Join(p.ServeFlags, " ")), p.MemoryGiB)
	if len(p.Files) > 0 {
		fmt.Fprintf(w, "files:     %d (%s)\n", len(p.Files), cmdutil.HumanBytes(p.TotalBytes()))
	} else {
		fmt.Fprintf(w, "files:     none listed until the pins are complete\n")
	}
	if p.ExpectedFiles > 0 {
		fmt.Fprintf(w, "expected:  %d files\n", p.ExpectedFiles)
	}
	if p.ExpectedBytes > 0 {
		fmt.Fprintf(w, "expected:  %s (%d bytes) in %s\n", cmdutil.HumanBytes(p.ExpectedBytes), p.ExpectedBytes, e(strings.Join(p.ExpectedBytesOf, ", ")))
	}
	if len(p.Files) > 0 {
		fmt.Fprintln(w)
	}
}
