// Package fetchcmd holds drama fetch.
package fetchcmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/hubaccess"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// FetchOptions are drama fetch's flags.
type FetchOptions struct {
	F *cmdutil.Factory
	hubaccess.HubFlags
	Workers       int
	ChunkMiB      int
	IdleTimeout   time.Duration
	LockWait      time.Duration
	AcceptLicense bool
	NoCache       bool
}

// NewCmd returns drama fetch.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *FetchOptions) error) *cobra.Command {
	opts := &FetchOptions{F: f}
	cmd := &cobra.Command{
		Use:   "fetch",
		Short: "Download a variant's pinned files from the Hugging Face Hub, verified",
		Long: `Download the pinned files of a variant into the Hugging Face cache and link
them into <root>/<variant>. Files are fetched in parallel ranged chunks,
hashed as they arrive and renamed to their final names only once their size
and sha256 match the pins. An interrupted fetch resumes where it stopped.

The licence of the weights is shown before the first byte; the fetch goes on
only with --accept-license or "yes" typed at a terminal.

Environment: HF_ENDPOINT, HF_TOKEN (else $HF_HOME/token), HF_HOME,
HF_HUB_CACHE, HF_HUB_OFFLINE=1 (no network: succeed only if every file is
present).`,
		Example: `  $ drama fetch --variant nvfp4 --accept-license
  $ drama fetch --endpoint http://10.0.0.5:8080 --workers 16
  $ HF_HUB_OFFLINE=1 drama fetch --variant full`,
		Args: hubaccess.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Workers < 1 || opts.Workers > 64 {
				return cmdutil.FlagErrorf("--workers %d: want 1 to 64", opts.Workers)
			}
			if opts.ChunkMiB < 1 || opts.ChunkMiB > 1024 {
				return cmdutil.FlagErrorf("--chunk-size %d: want 1 to 1024 MiB", opts.ChunkMiB)
			}
			if err := opts.HubFlags.Parse(f, cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			err := runFetch(cmd.Context(), opts)
			if err != nil && cmd.Context().Err() != nil {
				return resumeHint(opts.CommandLine(f))
			}
			return err
		},
	}
	opts.HubFlags.Bind(cmd, "pins file to fetch (default <root>/<variant>/pins.lock.json, else the built-in pins)")
	fl := cmd.Flags()
	fl.IntVar(&opts.Workers, "workers", hub.DefaultWorkers, "parallel download streams over all files; past 8, added only while they raise the rate")
	fl.IntVar(&opts.ChunkMiB, "chunk-size", hub.DefaultChunkSize>>20, "MiB per ranged request")
	fl.DurationVar(&opts.IdleTimeout, "idle-timeout", hub.DefaultIdleTimeout, "re-issue a stream that sent nothing for this long")
	fl.DurationVar(&opts.LockWait, "lock-wait", time.Minute, "how long to wait for another fetch of the same root or cache")
	fl.BoolVar(&opts.AcceptLicense, "accept-license", false, "accept the weights' licence (shown first) without a prompt")
	fl.BoolVar(&opts.NoCache, "no-cache", false, "keep the files in the root as plain files instead of links into the HF cache")
	return cmd
}

// resumeHint is the interruption of a fetch: what is kept, and the same
// command line, which resumes it.
func resumeHint(cmdline string) error {
	return cmdutil.Interrupted("verified files are kept and partial downloads resume: run the same command again: " + cmdline)
}

func runFetch(ctx context.Context, opts *FetchOptions) error {
	f := opts.F
	e, err := hubaccess.NewHub(f, opts.Endpoint, opts.Workers, opts.NoCache)
	if err != nil {
		return err
	}
	var rep *reporter // made once the pins are complete: its bars are sized by them
	closeRep := func() {
		if rep != nil {
			rep.close()
		}
	}
	defer closeRep()
	in := &hub.Install{
		Fetcher: hub.Fetcher{Client: e.Client, Cache: e.Cache, Offline: e.Offline, FlockWait: opts.LockWait,
			Download: hub.DownloadOptions{Workers: opts.Workers, ChunkSize: int64(opts.ChunkMiB) << 20, IdleTimeout: opts.IdleTimeout,
				Progress: func(path string, n int64) { rep.progress(path, n) },
				Event:    func(ev hub.Event) { withCheckLines(f, rep)(ev) }}},
		Root: e.Root, Variant: f.Global.Variant, HardLinks: opts.NoCache, Endpoint: e.Endpoint,
		Pins:   pins.LoadOptions{File: opts.PinsFile, CheckVariant: opts.VariantSet, For: pins.ForFetch},
		Accept: func(p *pins.Pins) error { return hubaccess.AcceptLicense(f, e.Root, p, opts.AcceptLicense) },
		Warn:   func(err error) { f.Warnf("%v", err) },
	}
	in.Begin = func(s hub.Step, p *pins.Pins) {
		switch s {
		case hub.StepListing:
			f.Infof("pins for %s have no digests yet: reading the listing of %s@%s", p.Variant, p.Repo, p.Revision)
		case hub.StepFetch:
			rep = newReporter(f, p)
			// A HEAD or API call is retried at most a few times: each
			// retry gets its line as text (the reporter keeps its rate
			// limit for the many chunk retries), and its event in --json.
			if f.Global.JSON || rep.pool != nil {
				e.Client.OnRetry = func(r hub.Retry) { rep.event(hub.Event{Kind: hub.EventRetry, Path: r.What, Error: r.Message()}) }
			}
		case hub.StepPlace:
			closeRep()
		}
	}
	res, err := in.Run(ctx)
	if err != nil {
		return e.InstallAdvice(err, opts.CommandLine(f), func(variant string) string {
			return "run " + f.Suggest("pins", "lock", "--variant", variant, "--pins", opts.PinsFile) + " online once (or drama fetch without HF_HUB_OFFLINE)"
		})
	}
	return printResult(f, res.Result, res.Dir)
}

// withCheckLines passes events to the reporter and, as text off a
// terminal, says when a cached blob drama did not verify is hashed (which
// takes a while for large files) and when one failed.
func withCheckLines(f *cmdutil.Factory, rep *reporter) func(hub.Event) {
	return func(e hub.Event) {
		if e.Kind == hub.EventCheck && !f.Global.JSON && rep.pool == nil {
			if e.Error != "" {
				f.Infof("check: %s: %s", e.Path, e.Error)
			} else {
				f.Infof("check: %s (%s): in the cache but not verified by drama: hashing it", e.Path, cmdutil.HumanBytes(e.Size))
			}
		}
		rep.event(e)
	}
}
