package enginecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/build"
)

// ShowOptions are the inputs of `drama engine show` and `drama engine
// verify`.
type ShowOptions struct {
	F          *cmdutil.Factory
	VariantSet bool
}

// Installed is one installed variant's record and its binaries' states.
type Installed struct {
	Variant  string              `json:"variant"`
	Dir      string              `json:"dir"`
	Record   *build.Record       `json:"record"`
	Binaries []build.BinaryState `json:"binaries"`
}

// NewCmdShow returns `drama engine show`. runF, if not nil, replaces the
// run (tests).
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{F: f}
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show the installed engines, their sources and their binaries' state",
		Long: strings.TrimSpace(`
For each installed variant (or only --variant): the commits it was built
from, the patches applied, the HEAD that was built, and each binary's state
against the record: ok, changed or missing.`),
		Example: strings.TrimSpace(`
$ drama engine show
$ drama engine show --variant full --json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.VariantSet = cmd.Flags().Changed("variant")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runShow(cmd.Context(), opts)
		},
	}
	return cmd
}

// NewCmdVerify returns `drama engine verify`. runF, if not nil, replaces
// the run (tests).
func NewCmdVerify(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{F: f}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the installed engine binaries against their record",
		Long: strings.TrimSpace(`
Hash each binary of each installed variant (or only --variant) and compare
it with engine.json and engine.sha256 beside it. A changed or missing
binary exits with status 3 and says how to rebuild it.`),
		Example: strings.TrimSpace(`
$ drama engine verify
$ drama engine verify --variant full --json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.VariantSet = cmd.Flags().Changed("variant")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runVerify(cmd.Context(), opts)
		},
	}
	return cmd
}

// installed reads the records of the installed variants.
func installed(opts *ShowOptions) ([]Installed, error) {
	f := opts.F
	root, err := f.Root()
	if err != nil {
		return nil, err
	}
	var variants []string
	if opts.VariantSet {
		variants = []string{f.Global.Variant}
	} else {
		entries, err := os.ReadDir(filepath.Join(root, "engine"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(root, "engine", e.Name(), build.RecordName)); e.IsDir() && err == nil {
				variants = append(variants, e.Name())
			}
		}
		sort.Strings(variants)
	}
	if len(variants) == 0 {
		return nil, fmt.Errorf("no engine installed in %s: run `drama engine install --variant %s`", filepath.Join(root, "engine"), f.Global.Variant)
	}
	var out []Installed
	for _, v := range variants {
		dir := build.Dir(root, v)
		rec, err := build.ReadRecord(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no engine installed for variant %s (%s has no %s): run `drama engine install --variant %s`", v, dir, build.RecordName, v)
		}
		if errors.Is(err, build.ErrBadRecord) {
			return nil, cmdutil.MismatchError(fmt.Errorf("%w: run `%s` again", err, f.Suggest("engine", "install", "--variant", v)))
		}
		if errors.Is(err, build.ErrMismatch) {
			return nil, cmdutil.MismatchError(err)
		}
		if err != nil {
			return nil, err
		}
		states, err := build.Check(dir, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, Installed{Variant: v, Dir: dir, Record: rec, Binaries: states})
	}
	return out, nil
}

func runShow(ctx context.Context, opts *ShowOptions) error {
	f := opts.F
	list, err := installed(opts)
	if err != nil {
		return err
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, list)
	}
	t := cmdutil.NewTable(f.IO, "variant", "binary", "state", "sha256", "recipe", "engine", "head", "patches", "installed")
	for _, in := range list {
		r := in.Record
		var patches []string
		for _, p := range r.Patches {
			patches = append(patches, p.File+"@"+p.SHA256[:12])
		}
		for _, b := range in.Binaries {
			t.AddRow(in.Variant, b.Name, string(b.State), b.Want, r.Recipe.Name+"@"+r.Recipe.Commit, r.Upstream.Name+"@"+r.Upstream.Commit,
				r.Head, strings.Join(append([]string{}, patches...), ","), r.InstalledAt)
		}
	}
	return t.Render()
}

func runVerify(ctx context.Context, opts *ShowOptions) error {
	f := opts.F
	list, err := installed(opts)
	if err != nil {
		return err
	}
	var bad []string
	for _, in := range list {
		for _, b := range in.Binaries {
			if b.State != build.StateOK {
				bad = append(bad, fmt.Sprintf("%s: %s (%s): run `drama engine install --variant %s` to rebuild it", b.Path, b.State, b.Detail, in.Variant))
			}
		}
	}
	if f.Global.JSON {
		if err := cmdutil.WriteJSON(f.IO.Out, list); err != nil {
			return err
		}
	} else {
		t := cmdutil.NewTable(f.IO, "variant", "binary", "state", "detail")
		for _, in := range list {
			for _, b := range in.Binaries {
				t.AddRow(in.Variant, b.Name, string(b.State), b.Detail)
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(bad) > 0 {
		return cmdutil.MismatchError(fmt.Errorf("engine binaries differ from their record:\n  %s", strings.Join(bad, "\n  ")))
	}
	return nil
}
