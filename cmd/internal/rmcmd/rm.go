// Package rmcmd implements `drama rm`.
package rmcmd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// Options are the inputs of `drama rm`.
type Options struct {
	F        *cmdutil.Factory
	Variant  string
	DryRun   bool
	LockWait time.Duration
}

// NewCmd returns `drama rm`. runF, if not nil, replaces the run (tests).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "rm VARIANT",
		Short: "Remove an installed variant, and the cache blobs nothing else uses",
		Long: strings.TrimSpace(`
Remove a variant from the root: its pinned files, its lock file and drama's
state in <root>/VARIANT, and in the Hugging Face cache its snapshot links,
its blobs and drama's refs (drama-pinned and this root's drama-root-...).

A blob is removed only when nothing else uses it: not another variant of
the root (nvfp4 and macos share one snapshot), not another snapshot of the
cache, not a ref other than drama's naming the commit (a branch ref, or
another root's drama-root-... ref), and its space counts as freed only when
no other hard link to it is left. Files in <root>/VARIANT that drama did
not put there are kept and named.

--dry-run prints the same report and removes nothing. A variant that a
running drama serve on this root serves is refused: stop it first.`),
		Example: strings.TrimSpace(`
$ drama rm nvfp4 --dry-run
$ drama rm nvfp4 --json`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.FlagErrorf("drama rm takes one variant to remove, got %d arguments: drama list shows those installed", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			_, installs, _, _ := cmdutil.Installs(f)
			return cmdutil.VariantNames(installs), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Variant = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.DryRun, "dry-run", "n", false, "say what would be removed and freed, remove nothing")
	cmd.Flags().DurationVar(&opts.LockWait, "lock-wait", 30*time.Second, "how long to wait for a drama fetch on this root to finish")
	return cmd
}

// Report is the JSON document of `drama rm --json`.
type Report struct {
	Variant    string     `json:"variant"`
	Dir        string     `json:"dir"`
	DryRun     bool       `json:"dry_run"`
	Files      []string   `json:"files"`
	Snapshots  []string   `json:"snapshots"`
	Blobs      []string   `json:"blobs"`
	Refs       []string   `json:"refs"`
	Kept       []hub.Kept `json:"kept"`
	Extra      []string   `json:"extra"`
	FreedBytes int64      `json:"freed_bytes"`
}

func run(ctx context.Context, opts *Options) error {
	f := opts.F
	root, installs, placed, err := cmdutil.Installs(f)
	if err != nil {
		return err
	}
	var target *pins.Install
	for i := range installs {
		if installs[i].Variant == opts.Variant {
			target = &installs[i]
		}
	}
	if target == nil {
		if len(installs) == 0 {
			return cmdutil.FlagErrorf("%s is not installed in %s: no variant is installed there", opts.Variant, root)
		}
		return cmdutil.FlagErrorf("%s is not installed in %s: installed are %s", opts.Variant, root, strings.Join(cmdutil.VariantNames(installs), ", "))
	}
	if target.Pins == nil {
		return cmdutil.MismatchError(fmt.Errorf("%w: drama rm reads the lock file to know what is the variant's; remove %s by hand", target.Err, target.Dir))
	}
	recs, err := serverec.List(root)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if rec.Variant == opts.Variant {
			return fmt.Errorf("drama serve pid %d on %s serves %s from %s: stop it first, then run drama rm %s again", rec.PID, rec.Addr, rec.Variant, root, opts.Variant)
		}
	}
	if !opts.DryRun {
		// No fetch on this root, nor on the cache repositories the
		// variant links into, while the removal decides and deletes.
		unlock, err := cmdutil.FlockRoot(ctx, root, opts.LockWait)
		if err != nil {
			return err
		}
		defer unlock()
		unlockRepos, err := hub.FlockRepos(ctx, placed[opts.Variant], opts.LockWait)
		if err != nil {
			return cmdutil.FlockAdvice(err, "a drama fetch of the same repository to this cache", "--lock-wait")
		}
		defer unlockRepos()
		if _, installs, placed, err = cmdutil.Installs(f); err != nil {
			return err
		}
		i := slices.IndexFunc(installs, func(in pins.Install) bool { return in.Variant == opts.Variant && in.Pins != nil })
		if i < 0 {
			return fmt.Errorf("%s went from %s while drama rm waited for the lock", opts.Variant, root)
		}
		target = &installs[i]
	}
	others := map[string][]hub.Placed{}
	for v, pls := range placed {
		if v != opts.Variant {
			others[v] = pls
		}
	}
	plan, err := hub.PlanRemoval(root, *target, placed[opts.Variant], others)
	if err != nil {
		return err
	}
	if !opts.DryRun {
		if err := plan.Apply(target.Dir); err != nil {
			return err
		}
	}
	return report(f, opts, target.Dir, plan)
}

func report(f *cmdutil.Factory, opts *Options, dir string, plan *hub.Removal) error {
	if f.Global.JSON {
		nz := func(s []string) []string {
			if s == nil {
				return []string{}
			}
			return s
		}
		kept := plan.Kept
		if kept == nil {
			kept = []hub.Kept{}
		}
		return cmdutil.WriteJSON(f.IO.Out, Report{Variant: opts.Variant, Dir: dir, DryRun: opts.DryRun, Files: nz(plan.Files),
			Snapshots: nz(plan.Snapshots), Blobs: nz(plan.Blobs), Refs: nz(plan.Refs), Kept: kept, Extra: nz(plan.Extra), FreedBytes: plan.Freed})
	}
	action := "removed"
	if opts.DryRun {
		action = "would remove"
	}
	t := cmdutil.NewTable(f.IO, "action", "kind", "path", "note")
	for _, g := range []struct {
		kind  string
		paths []string
	}{{"blob", plan.Blobs}, {"snapshot", plan.Snapshots}, {"ref", plan.Refs}} {
		for _, p := range g.paths {
			t.AddRow(action, g.kind, p, "")
		}
	}
	for _, k := range plan.Kept {
		t.AddRow("kept", "blob", k.Blob, cmdutil.HumanBytes(k.Size)+" used by "+k.Why)
	}
	for _, p := range plan.Extra {
		t.AddRow("kept", "file", p, "not placed by drama")
	}
	t.AddRow(action, "variant", dir, fmt.Sprintf("%d files", len(plan.Files)))
	if err := t.Render(); err != nil {
		return err
	}
	freed := "freed"
	if opts.DryRun {
		freed = "would free"
	}
	var keptBytes int64
	for _, k := range plan.Kept {
		keptBytes += k.Size
	}
	msg := fmt.Sprintf("%s %s %s", opts.Variant, freed, cmdutil.HumanBytes(plan.Freed))
	if len(plan.Kept) > 0 {
		msg += fmt.Sprintf("; kept %d blobs (%s) that something else still uses", len(plan.Kept), cmdutil.HumanBytes(keptBytes))
	}
	f.Infof("%s", msg)
	return nil
}
