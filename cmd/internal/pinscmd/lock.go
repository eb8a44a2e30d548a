package pinscmd

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/hubaccess"
	"github.com/drama-tts/drama/pins"
)

// LockOptions are drama pins lock's flags.
type LockOptions struct {
	F *cmdutil.Factory
	hubaccess.HubFlags
	Output string
}

// NewCmdLock returns drama pins lock, which writes the lock file: the pins
// completed from the Hub's listing.
func NewCmdLock(f *cmdutil.Factory, runF func(context.Context, *LockOptions) error) *cobra.Command {
	opts := &LockOptions{F: f}
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Fill in a pins file's sizes and digests from the Hub's listing of the pinned commit",
		Long: `Read the Hub's file listing of the exact commit a pins file names and fill
every file's size and digests: an LFS file's sha256 is its LFS oid; a small
file's git blob sha1 is its oid and its sha256 is computed from its bytes
once they match that sha1. Pins without a file list take the whole listing;
the result must agree with the totals the pins carry. A revision that is not
a full 40-hex commit is refused. Nothing is ever filled in from elsewhere.`,
		Example: `  $ drama pins lock --variant nvfp4
  $ drama pins lock --pins my.json --output -`,
		Args: hubaccess.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.HubFlags.Parse(f, cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runLock(cmd.Context(), opts)
		},
	}
	opts.HubFlags.Bind(cmd, "pins file to lock (default: the variant's built-in pins)")
	fl := cmd.Flags()
	fl.StringVarP(&opts.Output, "output", "o", "", "where to write the lock file (default <root>/<variant>/pins.lock.json; - for stdout)")
	return cmd
}

func runLock(ctx context.Context, opts *LockOptions) error {
	f := opts.F
	h, err := hubaccess.NewHub(f, opts.Endpoint, 1, false)
	if err != nil {
		return err
	}
	p, err := cmdutil.LoadPins(f, opts.PinsFile, opts.VariantSet, pins.ForLock)
	if err != nil {
		return err
	}
	q, err := h.Complete(ctx, p, opts.CommandLine(f))
	if err != nil {
		return err
	}
	out := opts.Output
	if out == "" {
		out = filepath.Join(h.VariantDir(p), pins.LockFileName)
	}
	if out == "-" {
		data, err := q.Marshal()
		if err != nil {
			return err
		}
		_, err = f.IO.Out.Write(data)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := q.WriteFile(out); err != nil {
		return err
	}
	f.Infof("wrote %s (%d files, %s)", out, len(q.Files), cmdutil.HumanBytes(q.TotalBytes()))
	return printFilled(f, q)
}

// printFilled shows what the listing filled in.
func printFilled(f *cmdutil.Factory, q *pins.Pins) error {
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, q)
	}
	t := cmdutil.NewTable(f.IO, "PATH", "SIZE", "LFS", "SHA256", "GIT SHA1")
	for _, pf := range q.Files {
		lfs := "no"
		if pf.LFS {
			lfs = "yes"
		}
		t.AddRow(pf.Path, cmdutil.HumanBytes(pf.Size), lfs, pf.SHA256, pf.GitSHA1)
	}
	return t.Render()
}
