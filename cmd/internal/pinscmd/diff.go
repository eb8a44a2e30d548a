package pinscmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
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
		if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
			return nil, cmdutil.FlagErrorf("%q is neither a variant (%s) nor a pins file", name, strings.Join(pins.Variants, ", "))
		}
		return cmdutil.LoadPins(f, name, false, pins.ForLock)
	}
	g := *f
	gl := *f.Global
	gl.Variant = name
	g.Global = &gl
	return cmdutil.LoadPins(&g, "", true, pins.ForInstalled)
}

// fieldChange is a pins field of the two sides.
type fieldChange struct {
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
	Same  bool   `json:"same"`
}

func fieldChanges(a, b *pins.Pins) []fieldChange {
	fa, fb := fields(a), fields(b)
	byName := map[string]string{}
	for _, x := range fb {
		byName[x.name] = x.value
	}
	var out []fieldChange
	seen := map[string]bool{}
	for _, x := range fa {
		seen[x.name] = true
		out = append(out, fieldChange{Field: x.name, A: x.value, B: byName[x.name], Same: x.value == byName[x.name]})
	}
	for _, x := range fb {
		if !seen[x.name] {
			out = append(out, fieldChange{Field: x.name, B: x.value})
		}
	}
	return out
}

func runDiff(_ context.Context, opts *DiffOptions) error {
	f := opts.F
	a, err := loadNamed(f, opts.A)
	if err != nil {
		return err
	}
	b, err := loadNamed(f, opts.B)
	if err != nil {
		return err
	}
	fc := fieldChanges(a, b)
	changes := pins.Diff(a, b)
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, map[string]any{"a": opts.A, "b": opts.B, "fields": fc, "changes": changes})
	}
	t := cmdutil.NewTable(f.IO, "field or path", "change", opts.A, opts.B)
	for _, c := range fc {
		kind := "changed"
		if c.Same {
			kind = "same"
		}
		t.AddRow(c.Field, kind, dash(c.A), dash(c.B))
	}
	for _, c := range changes {
		t.AddRow(c.Path, c.Kind, size(c.A), size(c.B))
	}
	if !a.Complete() || !b.Complete() {
		f.Infof("files are compared once both sides are complete: run %s and %s", lockHint(f, opts.A, a), lockHint(f, opts.B, b))
	}
	return t.Render()
}

func lockHint(f *cmdutil.Factory, name string, p *pins.Pins) string {
	if slices.Contains(pins.Variants, name) {
		return f.Suggest("pins", "lock", "--variant", name)
	}
	return f.Suggest("pins", "lock", "--pins", name)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func size(f *pins.File) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprint(f.Size)
}
