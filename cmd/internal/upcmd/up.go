// Package upcmd implements `drama up`: from an empty root to a serving
// drama in one command, each step done only when it is not done yet.
package upcmd

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/hubaccess"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// Options are the inputs of `drama up`.
type Options struct {
	F *cmdutil.Factory
	hubaccess.HubFlags
	AcceptLicense bool
	// SourcesFile, Source, Zig and NVCC are drama engine install's
	// --sources, --source, --zig and --nvcc.
	SourcesFile, Source, Zig, NVCC string
	// Qualify runs drama qualify (also when drama serve's
	// --require-qualified is given); AcceptNumerics is its
	// --accept-native-numerics.
	Qualify, AcceptNumerics bool
	// Service installs drama serve as a systemd unit or launchd agent
	// instead of serving in the foreground.
	Service bool
	// DryRun lists the steps, what each needs and what cannot work.
	DryRun bool
	// Serve holds drama serve's flags as given to up.
	Serve ServeFlags

	peers Peers
}

// ServeFlags are drama serve's flags as drama up was given them.
type ServeFlags struct {
	Args             []string // every serve flag given, as drama serve's arguments
	Engine           string   // --engine
	EngineBin        string   // --engine-bin
	PluginDir        string   // --plugin-dir
	Addr             string   // --addr
	APIKeyFile       string   // --api-key-file
	Admission        string   // --admission
	RequireQualified bool     // --require-qualified
	ReadyTimeout     time.Duration
}

// Peers are what drama up needs of the other commands. The command tree
// gives them, since one command package does not import another.
type Peers struct {
	// CheckServe returns a drama serve command whose run does nothing:
	// up takes its flags, and runs it once they are parsed so that they
	// are checked before any step.
	CheckServe func() *cobra.Command
	// Run runs another drama command in this process with the same
	// streams, args as on the command line (drama serve, drama service
	// install, drama qualify).
	Run func(ctx context.Context, args ...string) error
}

// NewCmd returns `drama up`.
func NewCmd(f *cmdutil.Factory, peers Peers, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f, peers: peers}
	serve := peers.CheckServe()
	cmd := &cobra.Command{
		Use:   "up [--variant V] [--service] [serve flags...]",
		Short: "Fetch, verify, build and serve a variant: every step not yet done, in order",
		Long: strings.TrimSpace(`
Take the root from wherever it is to a serving drama, doing each step that
is not done yet and skipping, with the reason, each that is:

  licence  shown, and accepted once (--accept-license, or "yes" at a terminal)
  fetch    the variant's pinned files from the Hub (drama fetch; resumable)
  verify   by sha256 each file the verified-state record does not vouch for
  engine   the native engine built from the variant's pinned sources
           (drama engine install; resumable); skipped when drama serve is
           given one (--engine-bin or $DRAMA_ENGINE_BIN) or finds one
  qualify  drama qualify, with --qualify or --require-qualified (off by
           default); --accept-native-numerics lets it write the marker
  serve    drama serve in the foreground with the serve flags given, or
           with --service the systemd unit or launchd agent (drama service
           install); once GET /ready answers, the address, the page and a
           drama say line that works as printed

Before the first step the whole run is checked, and refused at once with
the fix when it cannot work: no GPU for a CUDA engine, too little memory
or disk, a missing or wrong compiler. --dry-run lists the steps, the bytes
and time each needs and what would be refused, and does nothing.

Each step prints a line as it starts and ends (--json: NDJSON events on
standard output); downloads and hashing show a bar on a terminal and a line
every 10 s otherwise. Interrupted (Ctrl-C) or killed at any point, the
root stays resumable: run the same command again and it goes on.

Any flag of drama serve is passed on to it (and to the service).`),
		Example: strings.TrimSpace(`
$ drama up --variant nvfp4 --accept-license
$ drama up --variant nvfp4 --dry-run
$ drama up --variant nvfp4 --accept-license --service
$ drama up --variant nvfp4 --qualify --accept-native-numerics --require-qualified`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.HubFlags.Parse(f, cmd); err != nil {
				return err
			}
			opts.Serve = serveFlags(serve.Flags())
			// drama serve's own checks of its flags, before any step
			serve.SetContext(cmd.Context())
			if err := serve.RunE(serve, nil); err != nil {
				return err
			}
			if opts.Serve.RequireQualified {
				opts.Qualify = true
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	opts.HubFlags.Bind(cmd, "pins file to fetch (default <root>/<variant>/pins.lock.json, else the built-in pins)")
	fl := cmd.Flags()
	fl.BoolVar(&opts.AcceptLicense, "accept-license", false, "accept the weights' licence (shown first) without a prompt")
	fl.StringVar(&opts.SourcesFile, "sources", "", "engine sources pins file (default: the variant's built-in sources pins)")
	fl.StringVar(&opts.Source, "source", "", "engine sources mirror: a directory of clones, a git bundle, or a base URL")
	fl.StringVar(&opts.Zig, "zig", "", "Zig compiler (default $ZIG, else zig on the PATH, else /opt/zig-<version>/zig)")
	fl.StringVar(&opts.NVCC, "nvcc", "", "CUDA compiler (default $NVCC, else nvcc on the PATH, else /usr/local/cuda/bin/nvcc)")
	fl.BoolVar(&opts.Qualify, "qualify", false, "run drama qualify before serving (on with --require-qualified)")
	fl.BoolVar(&opts.AcceptNumerics, "accept-native-numerics", false, "with --qualify: accept that the native engine is not bit-exact with the reference, so the marker is written")
	fl.BoolVar(&opts.Service, "service", false, "install drama serve as a systemd unit or launchd agent (drama service install) instead of serving in the foreground")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "list the steps, the bytes and time each needs and what cannot work; do nothing")
	fl.AddFlagSet(serve.Flags())
	return cmd
}

// serveFlags reads drama serve's flags as given to up.
func serveFlags(fs *pflag.FlagSet) ServeFlags {
	var s ServeFlags
	fs.VisitAll(func(fl *pflag.Flag) {
		v := fl.Value.String()
		switch fl.Name {
		case "engine":
			s.Engine = v
		case "engine-bin":
			s.EngineBin = v
		case "plugin-dir":
			s.PluginDir = v
		case "addr":
			s.Addr = v
		case "api-key-file":
			s.APIKeyFile = v
		case "admission":
			s.Admission = v
		case "require-qualified":
			s.RequireQualified = v == "true"
		case "ready-timeout":
			s.ReadyTimeout, _ = time.ParseDuration(v)
		}
		if !fl.Changed {
			return
		}
		vals := []string{v}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			vals = sv.GetSlice()
		}
		for _, v := range vals {
			if fl.Value.Type() == "bool" {
				s.Args = append(s.Args, "--"+fl.Name+"="+v)
				continue
			}
			s.Args = append(s.Args, "--"+fl.Name, v)
		}
	})
	return s
}

// resume is the command line that goes on from where this run stops.
func (o *Options) resume() string {
	return o.F.Suggest(append([]string{"up"}, o.Given...)...)
}

// globalArgs are the global flags a command run for up gets: the same
// root, variant and output.
func (o *Options) globalArgs(root string) []string {
	args := []string{"--root", root, "--variant", o.F.Global.Variant}
	if o.F.Global.JSON {
		args = append(args, "--json")
	}
	if o.F.Global.Quiet {
		args = append(args, "--quiet")
	}
	return args
}

func run(ctx context.Context, opts *Options) error {
	u, err := newUp(opts)
	if err != nil {
		return err
	}
	pl := u.plan(ctx)
	if opts.DryRun {
		return u.printPlan(pl)
	}
	if err := pl.refused(); err != nil {
		return err
	}
	for _, s := range u.steps() {
		why, err := s.skip(ctx)
		if err == nil && why != "" {
			u.rep.step(s.name, stateSkipped, why, "")
			continue
		}
		if err == nil {
			u.rep.step(s.name, stateStart, "", "")
			var detail string
			if detail, err = s.run(ctx); err == nil {
				u.rep.step(s.name, stateDone, detail, "")
				continue
			}
		}
		if ctx.Err() != nil {
			u.rep.step(s.name, stateFailed, "interrupted", opts.resume())
			return cmdutil.Interrupted("every finished step is kept and an unfinished one resumes: run the same command again: " + opts.resume())
		}
		u.rep.step(s.name, stateFailed, err.Error(), opts.resume())
		return err
	}
	return nil
}

// up is one run of drama up: the root, the pins and the Hub.
type up struct {
	opts *Options
	f    *cmdutil.Factory
	rep  *reporter
	root string
	hub  *hubaccess.Hub
	p    *pins.Pins
	dir  string // <root>/<variant>
}

func newUp(opts *Options) (*up, error) {
	f := opts.F
	h, err := hubaccess.NewHub(f, opts.Endpoint, hub.DefaultWorkers, false)
	if err != nil {
		return nil, err
	}
	// --pins, else the variant's lock file in the root, else the built-in
	// pins, as its help says (and drama verify, qualify and serve do)
	p, err := cmdutil.LoadPins(f, opts.PinsFile, opts.VariantSet, pins.ForInstalled)
	if err != nil {
		return nil, err
	}
	if p.Variant != f.Global.Variant {
		// --pins names the variant: the steps after fetch follow it
		f.Global.Variant = p.Variant
	}
	return &up{opts: opts, f: f, rep: newReporter(f), root: h.Root, hub: h, p: p, dir: filepath.Join(h.Root, p.Variant)}, nil
}
