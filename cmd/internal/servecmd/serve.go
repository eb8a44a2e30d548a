// Package servecmd implements `drama serve` and `drama say`.
package servecmd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/host"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/prompt"
)

// DefaultAddr is where drama serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8793"

// Options are the inputs of `drama serve`.
type Options struct {
	F            *cmdutil.Factory
	Engine       string // cuda, metal or a plugin binary's path
	Addr         string
	AllowRemote  bool
	MaxQueue     int
	QueueTimeout time.Duration
	PluginDir    string
	EngineBin    string
	AllowEngine  bool // start an engine binary whose sha256 differs from the root's record
	VoicesDir    string
	DefaultVoice string
	MaxFrames    int
	LongForm     bool
	NoGuidance   bool
	Admission    string
	ReadyTimeout time.Duration
	Grace        time.Duration
	MaxPrompt    int // prompt tokens allowed; 0: from the checkpoint's config.json
	LogFile      string
	// Given are the flags of the command line as flag, value pairs, for
	// hints that repeat them.
	Given []string
	// Listening, if set, is called with the bound address once serving
	// (tests).
	Listening func(addr string)
}

// NewCmd returns `drama serve`.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve an OpenAI-compatible speech API through the engine plugin",
		Long: strings.TrimSpace(`
Launch the engine plugin for this OS (cuda on Linux, metal on macOS), start
the native engine with the variant's flags, and serve the speech API once it
is ready: POST /v1/audio/speech, GET /v1/models, GET|POST /v1/voices,
DELETE /v1/voices/{id}, GET /health, GET /ready, GET /metrics.

Requests are queued first in, first out in front of the engine's single
synthesis slot (--max-queue, --queue-timeout). drama serve binds to
127.0.0.1: the model's licence allows no hosted service without a separate
licence, so another address needs --allow-remote.

SIGINT or SIGTERM stops accepting, ends open streams, stops the engine and
exits with status 0 once everything is gone.`),
		Example: strings.TrimSpace(`
$ drama serve --variant nvfp4
$ drama serve --engine-bin ./bin/tensorfold-standin     # no GPU: the stand-in engine
$ curl -s --fail localhost:8793/v1/audio/speech -H 'Content-Type: application/json' -d '{"input":"Hello."}' -o hello.wav`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			opts.Given = cmdutil.GivenFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Engine, "engine", defaultEngine(), "engine plugin: cuda, metal, or a plugin binary's path")
	fl.StringVar(&opts.Addr, "addr", DefaultAddr, "address to listen on")
	fl.BoolVar(&opts.AllowRemote, "allow-remote", false, "allow an address other than loopback (see the licence)")
	fl.IntVar(&opts.MaxQueue, "max-queue", 32, "requests that may wait for the engine")
	fl.DurationVar(&opts.QueueTimeout, "queue-timeout", 5*time.Minute, "longest wait in the queue")
	fl.StringVar(&opts.PluginDir, "plugin-dir", "", "directory searched first for engine plugins")
	fl.StringVar(&opts.EngineBin, "engine-bin", "", "native engine binary (default $DRAMA_ENGINE_BIN, else <root>/engine/<binary>, else PATH)")
	fl.BoolVar(&opts.AllowEngine, "allow-engine-mismatch", false, "start an engine binary whose sha256 differs from <root>/engine/engine.sha256")
	fl.StringVar(&opts.VoicesDir, "voices", "", "directory of voice files the engine serves")
	fl.StringVar(&opts.DefaultVoice, "default-voice", "", "voice used when a request names none")
	fl.IntVar(&opts.MaxFrames, "max-frames", 0, "frame limit per synthesis (0: the engine's default)")
	fl.BoolVar(&opts.LongForm, "long-form", false, "split long texts into segments (CUDA)")
	fl.BoolVar(&opts.NoGuidance, "no-guidance", false, "serve nvfp4 without classifier-free guidance")
	fl.StringVar(&opts.Admission, "admission", "own", "memory admission: own, external or off")
	fl.DurationVar(&opts.ReadyTimeout, "ready-timeout", 900*time.Second, "deadline for the engine to become ready")
	fl.DurationVar(&opts.Grace, "grace", 10*time.Second, "how long open streams may finish at shutdown")
	fl.StringVar(&opts.LogFile, "log-file", "", "also write every log record to this file as JSON lines (appended)")
	fl.IntVar(&opts.MaxPrompt, "max-prompt-tokens", 0, "longest prompt in tokens (0: the model's context from config.json less a reserve for the reply)")
	_ = cmd.RegisterFlagCompletionFunc("engine", cobra.FixedCompletions([]string{"cuda", "metal"}, cobra.ShellCompDirectiveDefault))
	_ = cmd.RegisterFlagCompletionFunc("admission", cobra.FixedCompletions([]string{"own", "external", "off"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func defaultEngine() string {
	if runtime.GOOS == "darwin" {
		return "metal"
	}
	return "cuda"
}

func (o *Options) validate() error {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return cmdutil.FlagErrorf("--addr %q: want HOST:PORT, e.g. %s", o.Addr, DefaultAddr)
	}
	if !isLoopback(host) && !o.AllowRemote {
		return cmdutil.FlagErrorf("--addr %s is not a loopback address: the Fish Audio Community License allows no hosted service without a separate licence; pass --allow-remote if your use is covered", o.Addr)
	}
	switch {
	case o.MaxQueue < 0:
		return cmdutil.FlagErrorf("--max-queue must be 0 or more")
	case o.Admission != "own" && o.Admission != "external" && o.Admission != "off":
		return cmdutil.FlagErrorf("--admission %q: want own, external or off", o.Admission)
	case o.MaxFrames < 0:
		return cmdutil.FlagErrorf("--max-frames must be 0 or more")
	case o.MaxPrompt < 0:
		return cmdutil.FlagErrorf("--max-prompt-tokens must be 0 or more")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func run(ctx context.Context, opts *Options) error {
	f := opts.F
	root, err := f.Root()
	if err != nil {
		return err
	}
	plugin, err := cmdutil.FindPlugin(f, opts.PluginDir, opts.Engine, root)
	if err != nil {
		return err
	}
	req, err := startRequest(f, opts, root)
	if err != nil {
		return err
	}
	standIn := cmdutil.IsStandIn(req.EngineBin)
	if !standIn {
		if err := cmdutil.RequireInstalled(f, f.Global.Variant); err != nil {
			return err
		}
	}
	if err := checkVoices(opts); err != nil {
		return err
	}
	if err := checkNotServing(f, root); err != nil {
		return err
	}
	logs, err := newLogs(f, opts.LogFile)
	if err != nil {
		return err
	}
	defer logs.Close()
	logger := logs.logger
	if opts.AllowRemote && !isLoopbackAddr(opts.Addr) {
		logger.Warn("serving beyond loopback: the Fish Audio Community License allows no hosted service without a separate licence from Fish Audio")
	}
	if standIn && req.Admission == engine.AdmissionOwn && !slices.Contains(opts.Given, "--admission") {
		req.Admission = engine.AdmissionOff
		logger.Info("the engine binary is the stand-in: it loads no model, so memory admission is off", "engine_bin", req.EngineBin)
	}
	return serve(ctx, opts, logs, plugin, req, root)
}

// admissionHint adds to a refused memory admission the flags that hand the
// decision elsewhere, with the user's other flags.
func admissionHint(f *cmdutil.Factory, opts *Options, err error) error {
	if !strings.Contains(err.Error(), native.ErrMemory.Error()) {
		return err
	}
	return fmt.Errorf("%w\nto let an outer scheduler decide: %s\nto skip the check:              %s", err,
		f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--admission", "external")...)...),
		f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--admission", "off")...)...))
}

func isLoopbackAddr(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	return isLoopback(host)
}

// startRequest describes the install and the engine's settings.
func startRequest(f *cmdutil.Factory, opts *Options, root string) (engine.StartRequest, error) {
	variant := f.Global.Variant
	bin, err := engineBinary(f, opts, root)
	if err != nil {
		return engine.StartRequest{}, err
	}
	sum, err := cmdutil.EngineRecord(root)
	if err != nil {
		return engine.StartRequest{}, err
	}
	return engine.StartRequest{
		Install: engine.Install{Root: root, Variant: variant, ModelDir: filepath.Join(root, variant), EngineBin: bin,
			EngineSHA256: sum, AllowEngineMismatch: opts.AllowEngine},
		VoicesDir: opts.VoicesDir, DefaultVoice: opts.DefaultVoice, MaxFrames: opts.MaxFrames, LongForm: opts.LongForm,
		NoGuidance: opts.NoGuidance, Admission: engine.Admission(opts.Admission), ReadyTimeout: opts.ReadyTimeout,
		RuntimeDir: filepath.Join(root, ".drama", "run"),
	}, nil
}

func engineBinary(f *cmdutil.Factory, opts *Options, root string) (string, error) {
	plugin := opts.Engine
	if cmdutil.EngineBinaries[plugin] == "" {
		plugin = defaultEngine() // --engine is a path: assume this OS's engine
	}
	bin, err := cmdutil.EngineBinary(f, opts.EngineBin, plugin, root)
	if err == nil && bin == "" {
		err = fmt.Errorf("no native engine binary %s in %s or on the PATH: install it there or pass --engine-bin; to try drama without a GPU: %s",
			cmdutil.EngineBinaries[plugin], filepath.Join(root, "engine"),
			f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--engine-bin", "bin/tensorfold-standin")...)...))
	}
	return bin, err
}

// serve opens the plugin, starts the engine, and serves until ctx ends.
func serve(ctx context.Context, opts *Options, logs *logs, pluginPath string, req engine.StartRequest, root string) error {
	f := opts.F
	logger := logs.logger
	open := func(ctx context.Context) (engine.Engine, func(), error) {
		p, err := host.Open(ctx, pluginPath, host.Options{Logger: logs.hclog()})
		if err != nil {
			return nil, nil, err
		}
		return p, func() { _ = p.Close(context.Background(), opts.Grace) }, nil
	}
	progress := newStartProgress(logs.from(sourceEngine))
	sup := httpapi.NewSupervisor(open, req, progress.event)
	defer host.CleanupAll()
	defer sup.Stop(context.Background())

	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w: pick another --addr (%s)", opts.Addr, err,
			f.Suggest(append([]string{"serve"}, cmdutil.WithFlag(opts.Given, "--addr", "127.0.0.1:8794")...)...))
	}
	builder, err := promptBuilder(req.ModelDir, opts.MaxPrompt, logger)
	if err != nil {
		ln.Close()
		return err
	}
	srv, api := newHTTPServer(ctx, opts, logs, sup, root, req.Install, builder)
	addr := ln.Addr().String()
	if _, err := serverec.Write(root, serverec.Record{PID: os.Getpid(), Addr: addr, Variant: req.Variant, Root: root,
		Engine: engineName(opts.Engine), Started: time.Now(), LogFile: opts.LogFile,
		EngineLog: filepath.Join(req.RuntimeDir, "engine-"+engineName(opts.Engine)+".log")}); err != nil {
		logger.Warn("no serve record: drama status will not list this server", "err", err)
	}
	defer serverec.Remove(root, os.Getpid())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("listening; /ready answers 503 until the engine is ready", "addr", "http://"+addr)

	if err := sup.Start(ctx); err != nil {
		shutdown(srv, opts.Grace)
		if ctx.Err() != nil {
			return nil
		}
		return cmdutil.EngineError(fmt.Errorf("the engine did not start: %w", admissionHint(f, opts, err)))
	}
	progress.ready()
	if err := describe(ctx, sup, api); err != nil {
		logger.Warn("describe", "err", err)
	}
	go sup.Watch(ctx, time.Second)
	logger.Info("ready", "addr", "http://"+addr, "variant", req.Variant)
	if opts.Listening != nil {
		opts.Listening(addr)
	}
	select {
	case <-ctx.Done():
		logger.Info("stopping: finishing open requests", "grace", opts.Grace.String())
		shutdown(srv, opts.Grace)
		return nil
	case err := <-errc:
		return err
	}
}

// engineName is the plugin's name for a --engine value (a name or a path).
func engineName(e string) string {
	if cmdutil.EngineBinaries[e] != "" {
		return e
	}
	return strings.TrimPrefix(filepath.Base(e), "drama-engine-")
}

func newHTTPServer(ctx context.Context, opts *Options, logs *logs, sup *httpapi.Supervisor, root string, install engine.Install, builder *prompt.Builder) (*http.Server, *httpapi.Server) {
	ffmpeg, _ := exec.LookPath("ffmpeg")
	api := httpapi.New(httpapi.Config{
		Engine: sup.Engine(), Model: "drama-3-" + opts.F.Global.Variant, MaxQueue: opts.MaxQueue, QueueTimeout: opts.QueueTimeout,
		Status: sup, Failures: sup, FFmpeg: ffmpeg, Prompt: builder, Logger: logs.logger, Voices: newVoiceStore(filepath.Join(root, "voices"), sup, install,
			func() error { return cmdutil.RequireInstalled(opts.F, install.Variant) }),
	})
	sup.OnRestart = api.EngineRestarted
	srv := &http.Server{
		Handler:           accessLog(logs.from(sourceAccess), api.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:          slog.NewLogLogger(logs.logger.Handler(), slog.LevelWarn),
	}
	return srv, api
}

// describe reads the engine's capabilities into the API once it runs.
func describe(ctx context.Context, sup *httpapi.Supervisor, api *httpapi.Server) error {
	d, err := sup.Engine().Describe(ctx)
	if err != nil {
		return err
	}
	api.SetCapabilities(d.Capabilities)
	return nil
}

func shutdown(srv *http.Server, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close() // streams still open after the grace period are cut
	}
}
