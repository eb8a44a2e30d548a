package pinscmd

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pins"
)

// MakeOptions are the inputs of `drama pins make`.
type MakeOptions struct {
	F          *cmdutil.Factory
	Dir        string
	Output     string
	Repo       string
	Revision   string
	License    string
	Engine     string
	ServeFlags []string
	MemoryGiB  float64
	Local      bool
}

// NewCmdMake returns `drama pins make`.
func NewCmdMake(f *cmdutil.Factory, runF func(context.Context, *MakeOptions) error) *cobra.Command {
	opts := &MakeOptions{F: f}
	cmd := &cobra.Command{
		Use:   "make DIR -o FILE",
		Short: "Write complete pins (every size and sha256) for the files in a directory",
		Long: strings.TrimSpace(`
Hash every file under DIR (drama's .drama folder and pins.lock.json
excepted) and write a complete pins file for them, for --variant. Repository,
revision and the rest are taken from the variant's built-in pins unless
given.`),
		Example: "$ drama pins make ./my-quant --variant nvfp4 -o my-quant.pins.json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if opts.Output == "" {
				return cmdutil.FlagErrorf("-o FILE is required")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runMake(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Output, "output", "o", "", "pins file to write")
	fl.StringVar(&opts.Repo, "repo", "", "repository (owner/name)")
	fl.StringVar(&opts.Revision, "revision", "", "the commit the files come from (40 hex)")
	fl.StringVar(&opts.License, "license", "", "licence name")
	fl.StringVar(&opts.Engine, "engine", "", "engine: cuda or metal")
	fl.StringSliceVar(&opts.ServeFlags, "serve-flag", nil, "a native serve flag (repeatable)")
	fl.Float64Var(&opts.MemoryGiB, "memory-gib", 0, "resident memory estimate in GiB")
	fl.BoolVar(&opts.Local, "local", false, "the files do not come from the Hub: no repository, revision or expected totals")
	return cmd
}

func runMake(ctx context.Context, opts *MakeOptions) error {
	f := opts.F
	base, err := pins.Builtin(f.Global.Variant)
	if err != nil {
		return err
	}
	base.Files = nil
	override(base, opts)
	st, err := os.Stat(opts.Dir)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory: pass the folder holding the files to pin", opts.Dir)
	}
	bar := f.NewProgress("hash", dirSize(opts.Dir))
	p, err := pins.Make(ctx, opts.Dir, *base, bar.Add)
	bar.Finish()
	if err != nil {
		return err
	}
	if err := p.CheckExpected(); err != nil {
		f.Warnf("%s", otherFiles(opts.Dir, p))
		// The totals are the repository's, which these files are not.
		p.ExpectedFiles, p.ExpectedBytes, p.ExpectedBytesOf = 0, 0, nil
	}
	if err := p.WriteFile(opts.Output); err != nil {
		return err
	}
	f.Infof("wrote %s: %d files, %s", opts.Output, len(p.Files), cmdutil.HumanBytes(p.TotalBytes()))
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, p)
	}
	return nil
}

// otherFiles says that the files of dir, pinned in p, are not those of the
// repository p names, by how far they are from its totals, and what to pass.
func otherFiles(dir string, p *pins.Pins) string {
	var have int64
	for _, pf := range p.Files {
		for _, pat := range p.ExpectedBytesOf {
			if ok, _ := path.Match(pat, pf.Path); ok {
				have += pf.Size
				break
			}
		}
	}
	rev := p.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	var what string
	switch {
	case p.ExpectedFiles > 0 && len(p.Files) != p.ExpectedFiles:
		what = fmt.Sprintf("%d files, where the repository has %d", len(p.Files), p.ExpectedFiles)
	default:
		what = fmt.Sprintf("%s in %s, where the repository has %s", cmdutil.HumanBytes(have), strings.Join(p.ExpectedBytesOf, ", "), cmdutil.HumanBytes(p.ExpectedBytes))
	}
	return fmt.Sprintf("the files in %s are not those of %s at %s (%s): the pins name that repository and revision, so drama fetch finds these files only on a mirror of this folder, and the pins carry no totals; pass --local for files of your own, or --repo and --revision for another repository's",
		dir, p.Repo, rev, what)
}

func override(p *pins.Pins, o *MakeOptions) {
	if o.Local {
		p.Repo, p.RepoType, p.Revision, p.LicenseURL = "", "", "", ""
		p.ExpectedFiles, p.ExpectedBytes, p.ExpectedBytesOf = 0, 0, nil
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&p.Repo, o.Repo)
	set(&p.Revision, o.Revision)
	set(&p.License, o.License)
	set(&p.Engine, o.Engine)
	if o.ServeFlags != nil {
		p.ServeFlags = o.ServeFlags
	}
	if o.MemoryGiB > 0 {
		p.MemoryGiB = o.MemoryGiB
	}
}
