package pinscmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
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
	p, err := cmdutil.LoadPins(f, opts.PinsFile, opts.VariantSet)
	if err != nil {
		return err
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, p)
	}
	if f.IO.IsStdoutTTY() {
		printSummary(f.IO.Out, p)
	}
	t := cmdutil.NewTable(f.IO, "path", "size", "sha256")
	for _, file := range p.Files {
		t.AddRow(file.Path, fmt.Sprint(file.Size), file.SHA256)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if !p.Locked() {
		f.Infof("these pins are not locked (no per-file digests yet): run `drama pins lock --variant %s`", p.Variant)
	}
	return nil
}

func printSummary(w io.Writer, p *pins.Pins) {
	fmt.Fprintf(w, "variant:   %s\nrepo:      %s@%s\nlicence:   %s\nengine:    %s\n", p.Variant, p.Repo, p.Revision, p.License, p.Engine)
	fmt.Fprintf(w, "flags:     %s\nmemory:    %.1f GiB\nfiles:     %d (%s)\n", strings.Join(p.ServeFlags, " "), p.MemoryGiB, len(p.Files), cmdutil.HumanBytes(p.TotalBytes()))
	if p.ExpectedBytes > 0 {
		fmt.Fprintf(w, "expected:  %d bytes in %s\n", p.ExpectedBytes, strings.Join(p.ExpectedBytesOf, ", "))
	}
	fmt.Fprintln(w)
}
