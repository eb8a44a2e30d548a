package pinscmd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pins"
)

// DiffOptions are the inputs of `drama pins diff`.
type DiffOptions struct {
	F    *cmdutil.Factory
	A, B string
}

// NewCmdDiff returns `drama pins diff`.
func NewCmdDiff(f *cmdutil.Factory, runF func(context.Context, *DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{F: f}
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two pins by file",
		Long: strings.TrimSpace(`
Compare two pins, each a variant name (full, nvfp4, macos: the root's lock
file if present, else the built-in pins) or a pins file. Each path is
added, removed, changed, or the same (equal size and sha256: a file the
variants can share).`),
		Example: "$ drama pins diff full nvfp4",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.A, opts.B = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDiff(cmd.Context(), opts)
		},
	}
	return cmd
}

func loadNamed(f *cmdutil.Factory, name string) (*pins.Pins, error) {
	if !slices.Contains(pins.Variants, name) {
		return pins.ReadFile(name)
	}
	g := *f
	gl := *f.Global
	gl.Variant = name
	g.Global = &gl
	return cmdutil.LoadPins(&g, "", true)
}

func runDiff(_ context.Context, opts *DiffOptions) error {
	a, err := loadNamed(opts.F, opts.A)
	if err != nil {
		return err
	}
	b, err := loadNamed(opts.F, opts.B)
	if err != nil {
		return err
	}
	changes := pins.Diff(a, b)
	if opts.F.Global.JSON {
		return cmdutil.WriteJSON(opts.F.IO.Out, map[string]any{"a": opts.A, "b": opts.B, "changes": changes})
	}
	t := cmdutil.NewTable(opts.F.IO, "path", "change", "size a", "size b")
	for _, c := range changes {
		t.AddRow(c.Path, c.Kind, size(c.A), size(c.B))
	}
	if !a.Locked() || !b.Locked() {
		opts.F.Infof("one side is not locked: lock both (`drama pins lock`) to compare contents")
	}
	return t.Render()
}

func size(f *pins.File) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprint(f.Size)
}
