// Package serve is drama serve's assembly, behind one entry point, Run:
// the engines planned (Plan), a plugin and a supervisor each behind one
// pool, the HTTP API over them with its voice store (shared with other
// hosts or not) and, for a catalog engine, the catalog written before each
// start, the listener, the start, and the drain at the end. Before Run,
// the command makes the checks this package also owns: the voices'
// directories (CheckVoices) and the variant's files against its pins
// (VerifyFiles). The command gives it flags read into a Config (the
// keep-alive, the GPUs and the engines per GPU read by ParseKeepAlive,
// ParseGPUs and ParsePerGPU), its logs and its hooks; Run and the checks
// give back typed errors (*ListenError, *StartError, *SettingError,
// *FilesError) the command adds advice to.
package serve

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/host"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/httpapi/apikey"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/supervise"
	"github.com/drama-tts/drama/internal/connlimit"
	"github.com/drama-tts/drama/internal/hostcheck"
	"github.com/drama-tts/drama/internal/model"
	"github.com/drama-tts/drama/voices/store"
	"github.com/drama-tts/drama/voices/transcribe"
)

// Config is what drama serve runs.
type Config struct {
	// Engines are the engines to run (Plan), each through the plugin at
	// Plugin, whose own log lines go to PluginLog.
	Engines   []Planned
	Plugin    string
	PluginLog hclog.Logger
	// Root is the drama root: its voices, uploads and catalog (default
	// Install.Root).
	Root string
	// Install is the root and variant served: clones are encoded with it,
	// and its model directory's tokenizer.json bounds prompts (MaxPrompt
	// tokens when more than 0, else the model's context).
	Install   engine.Install
	MaxPrompt int
	// InstallReady, when set, says whether the install can encode (its
	// variant is on the root); its error is the answer to a clone.
	InstallReady func() error
	// KeepAlive is how long an engine stays loaded without a request: a
	// negative value keeps it loaded, 0 unloads it when each request ends.
	KeepAlive time.Duration
	// Grace is how long the requests in flight may finish at the end, and
	// each engine may take to stop.
	Grace time.Duration
	Pool  pool.Options
	// Addr is where to listen, MaxConns the connections open at once.
	Addr     string
	MaxConns int
	// API are the API's settings; New fills in its engines, voices,
	// ffmpeg, logger, address, upload directory and transcription.
	API httpapi.Config
	// VoicesDir is the operator's directory of voice files (a catalog
	// engine's catalog holds them); VoiceStore the directory of clones
	// (default <root>/voices), rescanned each VoiceStoreRescan where the
	// file system's notices cannot see other hosts' changes, or always
	// with VoiceStoreNoNotify.
	VoicesDir          string
	VoiceStore         string
	VoiceStoreRescan   time.Duration
	VoiceStoreNoNotify bool
	// TranscribeURL names a speech recognition server that transcribes
	// clips sent without their words.
	TranscribeURL string
	// CatalogClones is how many clones a catalog holds (0: CatalogClones).
	CatalogClones int
	// Log takes drama serve's own records, EngineLog the engines'
	// lifecycle, AccessLog a line per request.
	Log, EngineLog, AccessLog *slog.Logger
	// KeyFile is the API key file ReloadKeys reads again at each SIGHUP
	// (nil: no reload).
	KeyFile    string
	ReloadKeys func() (*apikey.Set, error)
	// OnListen, when set, is called with the bound address once the
	// server listens, before the engines start; the function it returns,
	// if any, is called when Run ends (drama serve's record).
	OnListen func(addr string) (done func())
	// OnReady, when set, is called with the bound address once every
	// engine is ready (tests).
	OnReady func(addr string)
}

// ListenError is an address Run could not listen on.
type ListenError struct {
	Addr string
	Err  error
}

// Error names the address.
func (e *ListenError) Error() string { return fmt.Sprintf("listen on %s: %v", e.Addr, e.Err) }

// Unwrap returns the cause.
func (e *ListenError) Unwrap() error { return e.Err }

// StartError is an engine that did not start.
type StartError struct{ Err error }

// Error says the engine did not start, and why.
func (e *StartError) Error() string { return "the engine did not start: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// Engine is one supervised engine under its name.
type Engine struct {
	Name string
	Sup  *supervise.Supervisor
}

// Server is drama serve's HTTP server over its engines, built by New.
type Server struct {
	HTTP     *http.Server
	API      *httpapi.Server
	Pool     *pool.Pool
	maxConns int
}

// Run serves cfg until ctx ends, then drains: it opens a plugin per
// engine, builds the server, listens, starts the engines one after
// another and serves.
func Run(ctx context.Context, cfg Config) error {
	logger := cfg.Log
	starts, engines := supervisors(cfg)
	if !OnLoopback(cfg.Addr) {
		logger.Warn("serving beyond loopback: the Fish Audio Community License allows no hosted service without a separate licence from Fish Audio")
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return &ListenError{Addr: cfg.Addr, Err: err}
	}
	builder, err := promptBuilder(cfg.Install.ModelDir, cfg.MaxPrompt, logger)
	if err != nil {
		ln.Close()
		return err
	}
	cfg.API.Prompt = builder
	addr := ln.Addr().String()
	s, err := New(ctx, cfg, engines, addr)
	if err != nil {
		ln.Close()
		return err
	}
	defer host.CleanupAll()
	defer s.Pool.Stop(context.Background())
	if cfg.ReloadKeys != nil {
		reloadKeysOnHUP(ctx, cfg, s.API)
	}
	if cfg.OnListen != nil {
		if done := cfg.OnListen(addr); done != nil {
			defer done()
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	logger.Info("listening; /ready answers 503 until the engine is ready", "addr", "http://"+addr)
	if err := s.start(ctx, cfg, starts, addr); err != nil {
		s.Shutdown(cfg.Grace)
		if ctx.Err() != nil {
			return nil
		}
		return &StartError{Err: err}
	}
	select {
	case <-ctx.Done():
		logger.Info("stopping: finishing open requests", "grace", cfg.Grace.String())
		s.Shutdown(cfg.Grace)
		return nil
	case err := <-errc:
		return err
	}
}

// OnLoopback reports whether addr (host:port) is on the loopback
// interface: the only address the model's licence lets drama serve listen
// on without a separate licence for a hosted service.
func OnLoopback(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	return hostcheck.Loopback(host)
}

// supervisors puts each planned engine under a supervisor of its own,
// opening a plugin per start, with the log of its start.
func supervisors(cfg Config) ([]*StartLog, []Engine) {
	open := func(ctx context.Context) (engine.Engine, func(), error) {
		p, err := host.Open(ctx, cfg.Plugin, host.Options{Logger: cfg.PluginLog})
		if err != nil {
			return nil, nil, err
		}
		return p, func() { _ = p.Close(context.Background(), cfg.Grace) }, nil
	}
	var starts []*StartLog
	var engines []Engine
	for _, pe := range cfg.Engines {
		log := cfg.EngineLog
		if len(cfg.Engines) > 1 {
			log = log.With("engine", pe.Name)
		}
		sl := NewStartLog(log)
		sup := supervise.New(open, pe.Req, sl.Event)
		sup.Logger = log
		starts, engines = append(starts, sl), append(engines, Engine{Name: pe.Name, Sup: sup})
	}
	return starts, engines
}

// start starts the engines one after another and, once all are ready,
// reads their capabilities and watches them; the error is the pool's
// start's.
func (s *Server) start(ctx context.Context, cfg Config, starts []*StartLog, addr string) error {
	logger, n := cfg.Log, len(starts)
	if n > 1 {
		logger.Info("starting engines one after another", "engines", n, "dispatch", string(cfg.Pool.Policy))
	}
	if err := s.Pool.Start(ctx, func(name string) {
		if n > 1 {
			logger.Info("engine ready", "engine", name)
		}
	}); err != nil {
		return err
	}
	for _, sl := range starts {
		sl.Ready()
	}
	if err := s.describe(ctx); err != nil {
		logger.Warn("could not read the engine's capabilities (Describe): requests are checked as if it had none", "err", err)
	}
	s.Pool.Watch(ctx, time.Second)
	logger.Info("ready", "addr", "http://"+addr, "variant", cfg.Install.Variant, "engines", n, "keep_alive", keepAliveWords(cfg.KeepAlive))
	if cfg.OnReady != nil {
		cfg.OnReady(addr)
	}
	return nil
}

// New builds the server over engines, bound to addr, not yet serving and
// its engines not started: the pool, the voice store (kept fresh for as
// long as ctx runs), the catalog a catalog engine is started with (each
// supervisor's Prepare) and its keep-alive, and the API.
func New(ctx context.Context, cfg Config, engines []Engine, addr string) (*Server, error) {
	logger := cmp.Or(cfg.Log, slog.New(slog.DiscardHandler))
	named := make([]pool.Named, len(engines))
	for i, e := range engines {
		named[i] = pool.Named{Name: e.Name, Member: e.Sup}
	}
	p, err := pool.New(named, cfg.Pool)
	if err != nil {
		return nil, err
	}
	root := cmp.Or(cfg.Root, cfg.Install.Root)
	ffmpeg, _ := exec.LookPath("ffmpeg")
	uploads := filepath.Join(root, model.StateDirName, "uploads")
	removeStaleUploads(uploads, logger)
	// the clones, in the voice store when the hosts behind a balancer
	// share one, kept fresh by inotify or rescans for as long as drama
	// serve runs
	clones := newVoiceStore("", p.Any(), cfg.Install, cfg.InstallReady)
	clones.files = store.New(cmp.Or(cfg.VoiceStore, filepath.Join(root, "voices")),
		store.Options{Rescan: cfg.VoiceStoreRescan, NoNotify: cfg.VoiceStoreNoNotify, Logger: logger})
	go func() {
		if err := clones.files.Run(ctx); err != nil {
			logger.Warn("the voice store is not kept fresh: clones and deletes of other hosts are seen only when a request names them", "err", err)
		}
	}()
	a := cfg.API
	if cfg.TranscribeURL != "" {
		clones.transcriber = &transcribe.Client{URL: cfg.TranscribeURL}
		a.Transcribe = clones.transcriber.File
	}
	// a catalog engine (Metal) gets its catalog written before each start
	catalog := newCatalogStore(clones, filepath.Join(root, model.StateDirName, "catalog"), cfg.VoicesDir)
	if cfg.CatalogClones > 0 {
		catalog.max = cfg.CatalogClones
	}
	for _, e := range engines {
		e.Sup.Prepare = catalog.prepare
		e.Sup.KeepAlive = supervisorKeepAlive(cfg.KeepAlive)
	}
	a.Restarter, a.FFmpeg, a.Logger, a.Voices, a.Addr = p, ffmpeg, logger, catalog, addr
	a.Uploads.Dir = uploads
	api := httpapi.New(p, a)
	access := cmp.Or(cfg.AccessLog, slog.New(slog.DiscardHandler))
	srv := &http.Server{
		Handler:           httpapi.AccessLog(access, api.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext:       httpapi.ConnContext, // a streamed reply bounds what waits unsent on its connection
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return &Server{HTTP: srv, API: api, Pool: p, maxConns: cfg.MaxConns}, nil
}

// DefaultMaxConns is the bound on open connections by default: far above
// the clients a host serves at once, far below its file descriptors.
const DefaultMaxConns = 512

// Serve serves on ln with at most Config.MaxConns connections open
// (DefaultMaxConns when 0), so that clients which open connections and
// leave them idle lock no one out.
func (s *Server) Serve(ln net.Listener) error {
	return connlimit.New(cmp.Or(s.maxConns, DefaultMaxConns)).Serve(s.HTTP, ln)
}

// describe reads the engine's capabilities into the API once it runs.
func (s *Server) describe(ctx context.Context) error {
	d, err := s.Pool.Any().Describe(ctx)
	if err != nil {
		return err
	}
	s.API.SetCapabilities(d.Capabilities)
	return nil
}

// DrainQuiet is how long no request may have begun or ended before a
// draining server stops accepting: a load balancer that has not yet seen
// GET /ready turn 503 still sends requests, which are served meanwhile.
const DrainQuiet = time.Second

// Shutdown drains the server for a load balancer: GET /ready answers 503
// at once while GET /health still answers 200, the queued requests are
// answered 503 with Retry-After, every reply closes its connection, and
// the requests in flight finish within grace while the listener stays
// open; once none is left and none has begun or ended for DrainQuiet it
// stops accepting (a balancer's next connection is refused, which it may
// retry elsewhere), and it cuts what is still open when grace ends.
func (s *Server) Shutdown(grace time.Duration) {
	s.API.Drain()
	s.HTTP.SetKeepAlivesEnabled(false)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	_ = s.API.WaitIdle(ctx, DrainQuiet)
	if err := s.HTTP.Shutdown(ctx); err != nil {
		_ = s.HTTP.Close() // streams still open after the grace period are cut
	}
}

// staleUpload is the age past which an upload directory is taken for the
// leftover of a drama serve that was killed during a clone.
const staleUpload = time.Hour

// removeStaleUploads removes upload directories (a clone's, a clip
// check's) a killed drama serve left (every other path removes its own);
// an upload that runs now in another drama serve on the root is younger
// than staleUpload.
func removeStaleUploads(dir string, logger *slog.Logger) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !(strings.HasPrefix(e.Name(), "clone-") || strings.HasPrefix(e.Name(), "check-")) || time.Since(info.ModTime()) < staleUpload {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			logger.Warn("could not remove a leftover upload", "dir", e.Name(), "err", err)
		}
	}
}

// reloadKeysOnHUP reads the API keys again (Config.ReloadKeys) at each
// SIGHUP until ctx ends. Keys that are refused leave the keys in force as
// they were, and the log says why.
func reloadKeysOnHUP(ctx context.Context, cfg Config, api *httpapi.Server) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reloadKeys(cfg, api)
			}
		}
	}()
}

// reloadKeys reads the keys again once.
func reloadKeys(cfg Config, api *httpapi.Server) {
	keys, err := cfg.ReloadKeys()
	if err == nil {
		err = api.SetKeys(keys)
	}
	if err != nil {
		cfg.Log.Error("the API key file was not reloaded: the keys before it stay in force", "file", cfg.KeyFile, "err", err)
		return
	}
	cfg.Log.Info("API keys reloaded", "file", cfg.KeyFile, "keys", keys.Len(), "names", strings.Join(keys.Names(), ","))
}
