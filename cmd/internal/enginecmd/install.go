package enginecmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/build"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// InstallOptions are the inputs of `drama engine install`.
type InstallOptions struct {
	F           *cmdutil.Factory
	SourcesFile string
	Source      string
	Zig, NVCC   string
	Patches     []string // FILE=SHA256
	Head        string
	LockWait    time.Duration
	VariantSet  bool
	// Given are the flags of the command line as flag, value pairs, for
	// advice that repeats them.
	Given []string
}

// NewCmdInstall returns `drama engine install`. runF, if not nil, replaces
// the run (tests).
func NewCmdInstall(f *cmdutil.Factory, runF func(context.Context, *InstallOptions) error) *cobra.Command {
	opts := &InstallOptions{F: f}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Build the native engine from the variant's pinned sources",
		Long: strings.TrimSpace(`
Build the variant's native engine on this host and record it:

  1. check the toolchain (Zig and CUDA's nvcc, or Xcode's Metal compiler),
     before anything is downloaded;
  2. fetch drama-tensorfold and TensorFold at their pinned commits, from
     GitHub or from --source, and check each HEAD;
  3. check drama-tensorfold's pinned files by sha256 (digests the pins do
     not give are completed from the checkout at the pinned commit and
     recorded in sources.lock.json, which later installs are held to) and
     upstream's patch series against its SHA256SUMS;
  4. apply upstream's series with the recipe's script and check the
     patched HEAD; apply your own patches (--patch FILE=SHA256, in order)
     and check the HEAD they give (--head);
  5. build, then install each binary with its sha256 in
     <root>/engine/<variant>/engine.json and engine.sha256.

Each step prints a line on standard error as it starts and ends, and one
every 30 s while it runs; the build's output goes to
<root>/engine/build/<variant>/build.log, and its tail is shown when a step
fails. An interrupted install resumes: finished steps are kept, any other
step starts again, and a binary is recorded only once its build finished.

--source is a mirror for sites without internet: a directory of clones
(<dir>/drama-tensorfold, <dir>/TensorFold), a git bundle holding both, or
another base URL. The pinned commits still decide what is built.
--sources replaces the variant's built-in sources pins with a file of the
same format (docs/engine-build.md).

Zig and nvcc come from --zig and --nvcc, else $ZIG and $NVCC, else the
PATH, else /opt/zig-0.17.0/zig and /usr/local/cuda/bin/nvcc. On macOS
without a usable Metal compiler everything else is put in place and the
install stops with exit status 3, naming what is missing.`),
		Example: strings.TrimSpace(`
$ drama engine install --variant full
$ drama engine install --variant nvfp4 --source /srv/mirror --zig /opt/zig-0.17.0/zig --nvcc /usr/local/cuda/bin/nvcc
$ drama engine install --sources engine-sources.json --source mirror --patch voice-cache.patch=$(sha256sum voice-cache.patch | cut -d' ' -f1) --head $(cat voice-cache.head)`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.VariantSet = cmd.Flags().Changed("variant")
			opts.Given = cmdutil.GivenFlags(cmd)
			if _, err := parsePatches(opts.Patches); err != nil {
				return cmdutil.FlagErrorf("--patch: %v", err)
			}
			if opts.Head != "" && !pins.IsCommit(opts.Head) {
				return cmdutil.FlagErrorf("--head: want a full 40-hex commit, got %q", opts.Head)
			}
			if len(opts.Patches) > 0 && opts.Head == "" {
				return cmdutil.FlagErrorf("--patch needs --head: the full commit your patches give on top of upstream's series")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runInstall(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.SourcesFile, "sources", "", "engine sources pins file (default: the variant's built-in sources pins)")
	fl.StringVar(&opts.Source, "source", "", "a mirror: a directory of clones, a git bundle, or a base URL")
	fl.StringVar(&opts.Zig, "zig", "", "Zig compiler (default $ZIG, else zig on the PATH, else /opt/zig-<version>/zig)")
	fl.StringVar(&opts.NVCC, "nvcc", "", "CUDA compiler (default $NVCC, else nvcc on the PATH, else /usr/local/cuda/bin/nvcc)")
	fl.StringArrayVar(&opts.Patches, "patch", nil, "your own patch, applied after upstream's series, as FILE=SHA256 (repeatable, in order)")
	fl.StringVar(&opts.Head, "head", "", "the engine checkout's full HEAD commit after your patches")
	fl.DurationVar(&opts.LockWait, "lock-wait", 5*time.Second, "how long to wait for another install of the variant to finish")
	return cmd
}

func parsePatches(specs []string) ([]build.Patch, error) {
	var out []build.Patch
	for _, s := range specs {
		i := strings.LastIndexByte(s, '=')
		if i <= 0 {
			return nil, fmt.Errorf("%q: want FILE=SHA256 (the sha256 of the patch you reviewed)", s)
		}
		file, sum := s[:i], strings.ToLower(s[i+1:])
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("%q: want FILE=SHA256 with 64 hex digits after the =, got %q", s, sum)
		}
		out = append(out, build.Patch{File: file, SHA256: sum})
	}
	return out, nil
}

func runInstall(ctx context.Context, opts *InstallOptions) error {
	f := opts.F
	s, err := cmdutil.LoadSources(f, opts.SourcesFile, opts.VariantSet)
	if err != nil {
		return err
	}
	root, err := f.Root()
	if err != nil {
		return err
	}
	lock, err := build.Complete(s, build.Dir(root, s.Variant))
	if err != nil {
		return cmdutil.MismatchError(err)
	}
	if lock != "" {
		f.Infof("engine %s: pinned file digests the pins leave empty are taken from %s", s.Variant, lock)
	}
	patches, _ := parsePatches(opts.Patches)
	unlock, err := hub.Flock(ctx, filepath.Join(root, pins.StateDirName, "engine-"+s.Variant+".lock"), opts.LockWait)
	if err != nil {
		return cmdutil.FlockAdvice(err, "another drama engine install of "+s.Variant, "--lock-wait")
	}
	defer unlock()
	start := time.Now()
	hb := newHeartbeat(f, s.Variant, filepath.Join(build.WorkDir(root, s.Variant), "build.log"), Heartbeat)
	defer hb.stop()
	o := build.Options{Root: root, Sources: s, Source: opts.Source,
		Zig: cmp.Or(opts.Zig, f.Getenv("ZIG")), NVCC: cmp.Or(opts.NVCC, f.Getenv("NVCC")),
		Patches: patches, Head: opts.Head, Env: os.Environ(), Step: hb.event}
	rec, err := build.Install(ctx, o)
	if err != nil {
		return installError(advice(f, opts, err))
	}
	f.Infof("engine %s: installed in %s (%s)", s.Variant, build.Dir(root, s.Variant), time.Since(start).Round(time.Millisecond))
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, rec)
	}
	t := cmdutil.NewTable(f.IO, "binary", "sha256", "path")
	for _, b := range rec.Binaries {
		t.AddRow(b.Name, b.SHA256, filepath.Join(build.Dir(root, s.Variant), b.Name))
	}
	return t.Render()
}

// advice adds to a refusal of build.Install what to pass this command, as
// the user's own command line where it gives one.
func advice(f *cmdutil.Factory, opts *InstallOptions, err error) error {
	again := func(flag, value string) string {
		return f.Suggest(append([]string{"engine", "install"}, cmdutil.WithFlag(opts.Given, flag, value)...)...)
	}
	var (
		te *build.ToolchainError
		ce *build.CommitError
		he *build.HeadError
		fe *build.FileError
	)
	switch {
	case errors.As(err, &te):
		flag := map[string]string{build.ToolZig: "--zig", build.ToolNVCC: "--nvcc"}[te.Tool]
		if flag == "" {
			return err
		}
		return fmt.Errorf("%w, then name it: run `%s` (or set %s instead of passing %s)", err, again(flag, te.Default), te.Env, flag)
	case errors.As(err, &ce):
		return fmt.Errorf("%w; point --source at a mirror: run `%s`", err, again("--source", "MIRROR"))
	case errors.As(err, &he) && he.Operator:
		return fmt.Errorf("%w; pass --head %s: run `%s`", err, he.Got, again("--head", he.Got))
	case errors.As(err, &fe) && fe.Repo != "":
		var from []string
		if opts.Source != "" {
			from = append(from, "the mirror given to --source is "+opts.Source)
		}
		if opts.SourcesFile != "" {
			from = append(from, "the pins given to --sources are "+opts.SourcesFile)
		} else {
			from = append(from, "the pins are the variant's built-in ones; --sources gives others")
		}
		return fmt.Errorf("%w (%s)", err, strings.Join(from, "; "))
	}
	return err
}

// installError maps a mismatch (a HEAD, a pinned file, a patch, Metal
// missing) onto exit status 3.
func installError(err error) error {
	if errors.Is(err, build.ErrMismatch) {
		return cmdutil.MismatchError(err)
	}
	return err
}

// Heartbeat is how often a step that is still running says so.
var Heartbeat = 30 * time.Second

// heartbeat prints a line as each step starts and ends, and one every
// interval while a step runs, naming the log.
type heartbeat struct {
	f        *cmdutil.Factory
	variant  string
	log      string
	interval time.Duration
	mu       sync.Mutex
	step     string
	since    time.Time
	quit     chan struct{}
	done     chan struct{}
}

func newHeartbeat(f *cmdutil.Factory, variant, log string, interval time.Duration) *heartbeat {
	h := &heartbeat{f: f, variant: variant, log: log, interval: interval, quit: make(chan struct{}), done: make(chan struct{})}
	go h.loop()
	return h
}

func (h *heartbeat) event(e build.StepEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Status {
	case "start":
		h.step, h.since = e.Step, time.Now()
		h.f.Infof("engine %s: %s ...", h.variant, e.Step)
	case "done":
		h.f.Infof("engine %s: %s: %s (%s)", h.variant, e.Step, e.Detail, time.Since(h.since).Round(time.Millisecond))
		h.step = ""
	default:
		h.f.Infof("engine %s: %s: %s: %s", h.variant, e.Step, e.Status, e.Detail)
		h.step = ""
	}
}

func (h *heartbeat) loop() {
	defer close(h.done)
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
			h.mu.Lock()
			if h.step != "" {
				h.f.Infof("engine %s: %s: still running (%s; log %s)", h.variant, h.step, time.Since(h.since).Round(time.Second), h.log)
			}
			h.mu.Unlock()
		}
	}
}

func (h *heartbeat) stop() {
	close(h.quit)
	<-h.done
}
