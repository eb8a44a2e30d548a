// Package verifycmd implements `drama verify`.
package verifycmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pins"
)

// Options are the inputs of `drama verify`.
type Options struct {
	F          *cmdutil.Factory
	Level      string
	PinsFile   string
	Workers    int
	NoRecord   bool
	VariantSet bool
}

// NewCmd returns `drama verify`. runF, if not nil, replaces the run (tests).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check an installed variant's files against its pins",
		Long: strings.TrimSpace(`
Check every pinned file of a variant under <root>/<variant>: missing files,
wrong sizes and, with --level sha256, wrong contents. Files that are not
pinned are listed as warnings.

The pins come from --pins, else the variant's pins.lock.json in the root
(written by a verified fetch), else the built-in pins.

--level size is fast. It also reports a file as sha256-verified when an
earlier full check recorded it and its size, mtime and inode are unchanged.
--level sha256 reads every byte, one file per worker.`),
		Example: strings.TrimSpace(`
$ drama verify --variant nvfp4
$ drama verify --level sha256 --json
$ drama verify --root ./demo/root --pins demo/demo.lock.json   # the root make demo made`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := pins.ParseLevel(opts.Level); err != nil {
				return cmdutil.FlagErrorf("--level: %v", err)
			}
			if opts.Workers < 0 {
				return cmdutil.FlagErrorf("--workers must be 0 (one per CPU) or more")
			}
			opts.VariantSet = cmd.Flags().Changed("variant")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Level, "level", "size", "how to check: size or sha256")
	cmd.Flags().StringVar(&opts.PinsFile, "pins", "", "pins file to check against")
	cmd.Flags().IntVar(&opts.Workers, "workers", 0, "files hashed at once (0: one per CPU)")
	cmd.Flags().BoolVar(&opts.NoRecord, "no-record", false, "neither use nor update the verified-state record")
	_ = cmd.RegisterFlagCompletionFunc("level", cobra.FixedCompletions([]string{"size", "sha256"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func run(ctx context.Context, opts *Options) error {
	f := opts.F
	// The install is checked before the pins are loaded (the built-in
	// pins of a variant never fetched are incomplete, which is not the
	// problem then), except that a --pins file's own faults come first.
	var p *pins.Pins
	var err error
	if opts.PinsFile != "" {
		if p, err = cmdutil.LoadPins(f, opts.PinsFile, opts.VariantSet, pins.ForInstalled); err != nil {
			return err
		}
		if err := cmdutil.RequireInstalled(f, p.Variant, "--pins", opts.PinsFile); err != nil {
			var ni *cmdutil.NotInstalledError
			if errors.As(err, &ni) && p.Repo == "" {
				return fmt.Errorf("%s is not installed in %s: %s names no repository to fetch from (pins of local files): put the files in %s",
					ni.Variant, ni.Root, opts.PinsFile, filepath.Join(ni.Root, ni.Variant))
			}
			return err
		}
	} else {
		if err := cmdutil.RequireInstalled(f, f.Global.Variant); err != nil {
			return err
		}
		if p, err = cmdutil.LoadPins(f, "", opts.VariantSet, pins.ForInstalled); err != nil {
			return err
		}
	}
	root, err := f.Root()
	if err != nil {
		return err
	}
	level, _ := pins.ParseLevel(opts.Level)
	var bar cmdutil.Progress
	vo := pins.VerifyOptions{Level: level, Workers: opts.Workers, NoRecord: opts.NoRecord}
	if level == pins.LevelSHA256 && p.Complete() {
		bar = f.NewProgress("verify "+p.Variant, p.TotalBytes())
		vo.Progress = bar.Add
	}
	rep, err := pins.Verify(ctx, filepath.Join(root, p.Variant), p, vo)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return cmdutil.PinsAdvice(f, err, p, opts.PinsFile)
	}
	if err := printReport(f, rep); err != nil {
		return err
	}
	return outcome(f, p, rep, opts.PinsFile)
}

func printReport(f *cmdutil.Factory, rep *pins.Report) error {
	for _, x := range rep.Extra {
		f.Warnf("%s is not pinned (extra file)", filepath.Join(rep.Dir, x))
	}
	if rep.RecordError != "" {
		f.Warnf("could not save the verified-state record: %s", rep.RecordError)
	}
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, rep)
	}
	t := cmdutil.NewTable(f.IO, "path", "status", "size", "verified", "detail")
	for _, r := range rep.Files {
		t.AddRow(r.Path, string(r.Status), sizeCell(f, r.GotSize), string(r.Verified), detail(f, r))
	}
	return t.Render()
}

// sizeCell is a size as fetch shows it: MiB on a terminal, bytes when piped.
func sizeCell(f *cmdutil.Factory, n int64) string {
	if f.IO.IsStdoutTTY() {
		return cmdutil.HumanBytes(n)
	}
	return fmt.Sprint(n)
}

func detail(f *cmdutil.Factory, r pins.Result) string {
	switch r.Status {
	case pins.StatusSizeMismatch:
		if f.IO.IsStdoutTTY() {
			return fmt.Sprintf("size: want %s (%d bytes), got %s (%d bytes)", cmdutil.HumanBytes(r.WantSize), r.WantSize, cmdutil.HumanBytes(r.GotSize), r.GotSize)
		}
		return fmt.Sprintf("size: want %d, got %d", r.WantSize, r.GotSize)
	case pins.StatusSHA256Mismatch:
		return fmt.Sprintf("sha256: want %s, got %s", r.WantSHA256, r.GotSHA256)
	case pins.StatusMissing:
		if f.IO.IsStdoutTTY() {
			return fmt.Sprintf("missing: want %s", cmdutil.HumanBytes(r.WantSize))
		}
		return fmt.Sprintf("missing: want %d bytes", r.WantSize)
	case pins.StatusUnreadable:
		return r.Error
	}
	if r.FromRecord {
		return "sha256 from the verified-state record"
	}
	return ""
}

func outcome(f *cmdutil.Factory, p *pins.Pins, rep *pins.Report, pinsFile string) error {
	total := len(rep.Files)
	bad := total - rep.Count(pins.StatusOK)
	switch {
	case rep.Mismatched():
		return cmdutil.MismatchError(fmt.Errorf("%d of %d files of %s do not match the pins (see above): %s",
			bad, total, rep.Variant, cmdutil.RepairHint(f, p, pinsFile, rep.Dir)))
	case bad > 0:
		return fmt.Errorf("%d of %d files of %s could not be read (see above): check their permissions and run verify again", bad, total, rep.Variant)
	}
	sha := 0
	for _, r := range rep.Files {
		if r.Verified == pins.LevelSHA256 {
			sha++
		}
	}
	f.Infof("%d files of %s match the pins (%d by sha256, %d by size)", total, rep.Variant, sha, total-sha)
	return nil
}
