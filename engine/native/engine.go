package native

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drama-tts/drama/engine"
)

// EngineOptions configure an Engine.
type EngineOptions struct {
	Version string // the plugin's version
	// AnyOS lets a flavor run on an OS it was not built for; for tests with
	// the stand-in only.
	AnyOS bool
	// Grace is the default stop grace (DefaultGrace when 0).
	Grace time.Duration
	// Logger receives the engine's lifecycle; nil discards it.
	Logger hclog.Logger
}

// Engine implements engine.Engine for one flavor by supervising the native
// server and speaking its HTTP contract. Both plugins are an Engine.
type Engine struct {
	flavor *Flavor
	opts   EngineOptions
	life   sync.Mutex // serializes Start and Stop

	mu     sync.Mutex
	proc   *Process
	client *Client
	req    engine.StartRequest
	phase  engine.Phase
	since  time.Time
	exit   string         // the last unexpected exit
	voices []engine.Voice // read from the voices directory at start
}

var _ engine.Engine = (*Engine)(nil)

// NewEngine returns an engine for flavor, not started.
func NewEngine(flavor *Flavor, opts EngineOptions) *Engine {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Engine{flavor: flavor, opts: opts, since: time.Now()}
}

// Describe reports the flavor's variants, capabilities and estimates.
func (e *Engine) Describe(ctx context.Context) (engine.Description, error) {
	f := e.flavor
	return engine.Description{
		Name: f.Name, Version: e.opts.Version, APIVersion: engine.APIVersion,
		OS: runtime.GOOS, Arch: runtime.GOARCH, Engine: f.ServerBinary,
		Variants: slices.Clone(f.Variants), MemoryEstimate: maps.Clone(f.MemoryEstimate),
		Capabilities: engine.Capabilities{Stream: true, LongForm: f.LongForm, References: f.References,
			Encode: true, VoiceCatalog: f.VoiceCatalog, RestartToClone: f.VoiceCatalog, MaxFrames: f.MaxFrames},
	}, nil
}

// checkOS refuses a flavor on an OS it was not built for.
func (e *Engine) checkOS() error {
	if e.opts.AnyOS || runtime.GOOS == e.flavor.GOOS {
		return nil
	}
	other := "drama-engine-cuda (Linux with an NVIDIA GPU)"
	if e.flavor == CUDA {
		other = "drama-engine-metal (macOS on Apple silicon)"
	}
	return engine.Errorf(engine.KindFailed, "the %s engine runs on %s only; this machine is %s/%s: use %s",
		e.flavor.Name, e.flavor.GOOS, runtime.GOOS, runtime.GOARCH, other)
}

// Start launches the native server and waits until it is ready. A running
// server is stopped first, so Start also restarts (the Metal build reads
// its voice catalog only at start).
func (e *Engine) Start(ctx context.Context, req engine.StartRequest, events func(engine.LifecycleEvent)) error {
	emit := func(ev engine.LifecycleEvent) {
		if ev.Time.IsZero() {
			ev.Time = time.Now()
		}
		e.opts.Logger.Info(ev.Message, "phase", ev.Phase.String(), "pid", ev.PID)
		e.setPhase(ev.Phase)
		if events != nil {
			events(ev)
		}
	}
	if err := e.checkOS(); err != nil {
		return err
	}
	e.life.Lock()
	defer e.life.Unlock()
	e.stop(engine.StopRequest{})
	emit(engine.LifecycleEvent{Phase: engine.PhasePreflight, Message: "checking binary, memory and leftovers", Progress: -1})
	cfg, err := e.preflight(req, emit)
	if err != nil {
		emit(engine.LifecycleEvent{Phase: engine.PhaseExited, Message: err.Error(), Progress: -1})
		return err
	}
	voices, err := readVoices(req.VoicesDir, e.flavor.VoiceFormat)
	if err != nil {
		return err
	}
	cfg.Events = emit
	proc, err := launchRetryingPort(ctx, cfg)
	if err != nil {
		return e.launchFailed(err, emit)
	}
	e.mu.Lock()
	e.proc, e.client, e.req, e.exit, e.voices = proc, NewClient(proc.Addr()), req, "", voices
	e.mu.Unlock()
	go e.watch(proc)
	return nil
}

// launchRetryingPort launches, trying another free port when the server
// exits because its port was taken between the choice and its bind.
func launchRetryingPort(ctx context.Context, cfg Config) (*Process, error) {
	for try := 1; ; try++ {
		proc, err := Launch(ctx, cfg)
		var x *ExitError
		if err == nil || try == 3 || !errors.As(err, &x) || !strings.Contains(strings.ToLower(x.Tail), "address already in use") {
			return proc, err
		}
		port, perr := freePort()
		if perr != nil {
			return nil, err
		}
		cfg.Args = replacePort(cfg.Args, cfg.Port, port)
		cfg.Port = port
	}
}

// replacePort swaps the value of --port in args.
func replacePort(args []string, old, port int) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--port" && out[i+1] == strconv.Itoa(old) {
			out[i+1] = strconv.Itoa(port)
		}
	}
	return out
}

func (e *Engine) launchFailed(err error, emit func(engine.LifecycleEvent)) error {
	ev := engine.LifecycleEvent{Phase: engine.PhaseExited, Message: err.Error(), Progress: -1}
	var ee *ExitError
	if errors.As(err, &ee) {
		ev.ExitCode, ev.LogTail = ee.Code, ee.Tail
	}
	emit(ev)
	e.mu.Lock()
	e.exit = err.Error()
	e.mu.Unlock()
	return &engine.Error{Kind: engine.KindFailed, Op: "start", Msg: err.Error(), LogTail: ev.LogTail, Err: err}
}

// watch marks the engine exited when its process ends unasked.
func (e *Engine) watch(p *Process) {
	<-p.Done()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proc != p {
		return
	}
	if x := p.Exit(); x != nil && !x.Stopped {
		e.opts.Logger.Error("native engine exited", "code", x.Code, "signal", x.Signal, "tail", lastLines(x.Tail, 20))
		e.exit = x.Error()
		e.phase, e.since = engine.PhaseExited, time.Now()
	}
}

func (e *Engine) setPhase(ph engine.Phase) {
	e.mu.Lock()
	e.phase, e.since = ph, time.Now()
	e.mu.Unlock()
}

// preflight resolves the binary, checks its sha256 and memory, stops a
// leftover child and builds the launch config.
func (e *Engine) preflight(req engine.StartRequest, emit func(engine.LifecycleEvent)) (Config, error) {
	if err := e.checkFlags(req); err != nil {
		return Config{}, err
	}
	bin, err := e.binary(req.Install, e.flavor.ServerBinary)
	if err != nil {
		return Config{}, err
	}
	if err := e.admit(req, emit); err != nil {
		return Config{}, err
	}
	dir, err := runtimeDir(req.RuntimeDir)
	if err != nil {
		return Config{}, err
	}
	runtimeFile := RuntimeFile(dir, e.flavor.Name)
	left, err := StopLeftover(runtimeFile, e.opts.Grace)
	if err != nil {
		return Config{}, engine.Errorf(engine.KindFailed, "%w", err)
	}
	if left.Found {
		emit(engine.LifecycleEvent{Phase: engine.PhasePreflight, Progress: -1, PID: left.PID, Message: leftoverMessage(left)})
	}
	port, err := freePort()
	if err != nil {
		return Config{}, err
	}
	return Config{
		Binary: bin, Port: port, Args: e.flavor.ServeArgs(e.serveOptions(req, port)),
		Env: Environ(os.Environ(), req.Env...), LogPath: LogFile(dir, e.flavor.Name),
		RuntimeFile: runtimeFile, ReadyTimeout: req.ReadyTimeout, StallTimeout: req.StallTimeout,
	}, nil
}

func leftoverMessage(l Leftover) string {
	if l.Stopped {
		return fmt.Sprintf("stopped a leftover engine (pid %d) from an earlier run", l.PID)
	}
	return "runtime file named no live engine (" + l.Reason + "); nothing signalled"
}

// checkFlags refuses settings the flavor does not have.
func (e *Engine) checkFlags(req engine.StartRequest) error {
	if req.LongForm && !e.flavor.LongForm {
		return engine.Invalidf("long form is not available on the %s engine", e.flavor.Name)
	}
	if m := e.flavor.MaxFrames; m > 0 && req.MaxFrames > m {
		return engine.Invalidf("max frames: want at most %d on the %s engine, got %d", m, e.flavor.Name, req.MaxFrames)
	}
	if req.MaxFrames < 0 {
		return engine.Invalidf("max frames: want a positive number, got %d", req.MaxFrames)
	}
	for _, p := range []struct {
		key string
		min int
	}{{ParamLongFormChars, 1}, {ParamLongFormHistory, 0}} {
		v, ok := req.Params[p.key]
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(v); err != nil || n < p.min {
			return engine.Invalidf("%s: want a whole number of at least %d, got %q", p.key, p.min, v)
		}
		if !e.flavor.LongForm {
			return engine.Invalidf("%s: long form is not available on the %s engine", p.key, e.flavor.Name)
		}
	}
	return nil
}

// Engine parameters (StartRequest.Params) of the native engine.
const (
	// ParamLongFormChars is the long-form segment length in characters
	// (--long-form-chars; default 500).
	ParamLongFormChars = "long_form_chars"
	// ParamLongFormHistory is how many earlier segments a long-form
	// segment is conditioned on (--long-form-history; default 1).
	ParamLongFormHistory = "long_form_history"
)

// EnvPrefixCache is the native engine's environment variable for the
// number of voice prefixes it keeps cached (default 2, 0 off).
const EnvPrefixCache = "DRAMA_PREFIX_CACHE"

// binary returns the engine binary, checked against the recorded sha256.
func (e *Engine) binary(in engine.Install, name string) (string, error) {
	bin := in.EngineBin
	if bin == "" {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", engine.Errorf(engine.KindFailed, "native engine %s not found: install it or give its path", name)
		}
		bin = p
	}
	if in.EngineSHA256 == "" {
		return bin, nil
	}
	err := CheckBinary(bin, in.EngineSHA256)
	if errors.Is(err, ErrChecksum) && in.AllowEngineMismatch {
		return bin, nil
	}
	if err != nil {
		return "", engine.Errorf(engine.KindFailed, "%w", err)
	}
	return bin, nil
}

// admit applies the memory admission mode against the variant's estimate.
func (e *Engine) admit(req engine.StartRequest, emit func(engine.LifecycleEvent)) error {
	if req.Admission != "" && req.Admission != engine.AdmissionOwn {
		return Admit(string(req.Admission), 0, 0, Memory{})
	}
	est, ok := e.flavor.MemoryEstimate[req.Variant]
	if !ok {
		return engine.Invalidf("variant %q: the %s engine serves %v", req.Variant, e.flavor.Name, e.flavor.Variants)
	}
	mem, err := AvailableMemory()
	if err != nil {
		return engine.Errorf(engine.KindFailed, "memory admission: %w; set admission to external or off", err)
	}
	if err := Admit("own", est, DefaultReserve, mem); err != nil {
		return engine.Errorf(engine.KindFailed, "%w", err)
	}
	emit(engine.LifecycleEvent{Phase: engine.PhasePreflight, Progress: -1,
		Message: fmt.Sprintf("memory: %s available (%s), %s needed", gib(mem.Available), mem.Source, gib(est+DefaultReserve))})
	return nil
}

func (e *Engine) serveOptions(req engine.StartRequest, port int) ServeOptions {
	o := ServeOptions{Port: port, Model: req.ModelDir, Variant: req.Variant, MaxFrames: req.MaxFrames,
		Voices: req.VoicesDir, DefaultVoice: req.DefaultVoice, LongForm: req.LongForm, NoGuidance: req.NoGuidance}
	// checkFlags has checked the long-form parameters
	if v, ok := req.Params[ParamLongFormChars]; ok {
		o.LongFormChars, _ = strconv.Atoi(v)
	}
	if v, ok := req.Params[ParamLongFormHistory]; ok {
		h, _ := strconv.Atoi(v)
		o.LongFormHistory = &h
	}
	if req.ModelDir != "" {
		o.Codec = filepath.Join(req.ModelDir, "codec.pth")
	}
	return o
}

// runtimeDir returns dir, else $XDG_RUNTIME_DIR/drama, else a per-user
// directory under the temporary directory; it is created.
func runtimeDir(dir string) (string, error) {
	if dir == "" {
		if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
			dir = filepath.Join(x, "drama")
		} else {
			dir = filepath.Join(os.TempDir(), "drama-"+strconv.Itoa(os.Getuid()))
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", engine.Errorf(engine.KindFailed, "runtime directory: %w", err)
	}
	return dir, nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, engine.Errorf(engine.KindFailed, "free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Health reports the phase and the native pid. A ready engine's health
// route is asked too: a server that stopped answering is not ready.
func (e *Engine) Health(ctx context.Context) (engine.Health, error) {
	e.mu.Lock()
	h := engine.Health{Phase: e.phase, Since: e.since, LastExit: e.exit, Message: e.exit}
	client := e.client
	if e.proc != nil && e.proc.Exit() == nil {
		h.PID = e.proc.PID()
	}
	e.mu.Unlock()
	h.Ready = h.Phase == engine.PhaseReady && h.PID > 0
	if !h.Ready {
		return h, nil
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := client.Health(hctx); err != nil {
		h.Ready, h.Message = false, "the native engine's health route does not answer: "+err.Error()
		return h, nil
	}
	h.Message = "serving on " + client.Addr
	return h, nil
}

// Stop stops the native server: SIGTERM to its group, the grace period,
// then SIGKILL.
func (e *Engine) Stop(ctx context.Context, req engine.StopRequest) (engine.StopResult, error) {
	e.life.Lock()
	defer e.life.Unlock()
	return e.stop(req), nil
}

func (e *Engine) stop(req engine.StopRequest) engine.StopResult {
	e.mu.Lock()
	p, client := e.proc, e.client
	e.proc, e.client = nil, nil
	e.mu.Unlock()
	if client != nil {
		client.CloseIdle() // the server's stop need not wait for them
	}
	if p == nil {
		return engine.StopResult{}
	}
	grace := req.Grace
	if grace <= 0 {
		grace = e.opts.Grace
	}
	running := p.Exit() == nil
	x, killed := p.Stop(grace)
	e.setPhase(engine.PhaseStopped)
	res := engine.StopResult{WasRunning: running, Killed: killed}
	if x != nil {
		res.ExitCode, res.LogTail = x.Code, x.Tail
	}
	return res
}

// current returns the client of a ready engine, or a not-ready error.
func (e *Engine) current() (*Client, *Process, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.proc == nil:
		return nil, nil, engine.NotReadyf("the %s engine is not started", e.flavor.Name)
	case e.proc.Exit() != nil:
		return nil, nil, engine.NotReadyf("the native engine exited (%s): start it again", e.proc.Exit().Error())
	case e.phase != engine.PhaseReady:
		return nil, nil, engine.NotReadyf("the %s engine is %s", e.flavor.Name, e.phase)
	}
	return e.client, e.proc, nil
}
