package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi/apikey"
	"github.com/drama-tts/drama/engine/httpapi/upload"
	"github.com/drama-tts/drama/engine/httpapi/webui"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/prompt"
	"github.com/drama-tts/drama/engine/supervise"
	"github.com/drama-tts/drama/internal/hostcheck"
	"github.com/drama-tts/drama/voices"
)

// Readiness is the body of GET /ready: the engines' state as one (their
// supervisors' Status, as the pool sums it), how many engines there are
// and how many of them are ready, and each engine's own state under its
// name. Ready is whether a request sent now is taken: an engine unloaded
// for idleness, or loading again on demand, is ready (the request waits
// for the load) and not Loaded.
type Readiness struct {
	supervise.Status
	Engines      int                `json:"engines"`
	EnginesReady int                `json:"engines_ready"`
	PerEngine    []pool.EngineState `json:"per_engine,omitempty"`
}

// Config configures a Server.
type Config struct {
	// Caps are the engine's capabilities (from Describe).
	Caps engine.Capabilities
	// Model is the id listed by GET /v1/models, e.g. "drama-3-nvfp4".
	Model string
	// QueueTimeout is the longest a request waits in the queue (default 5 min).
	QueueTimeout time.Duration
	// ReadyWait is how long a speech request that finds no engine ready
	// waits in the queue for one before its 503 engine_not_ready (0: it
	// does not wait). A balancer
	// that sends such a 503 on to another host (nothing of the request ran
	// here) has taken this host out by then.
	ReadyWait time.Duration
	// Restarter restarts the engine within a request, to load a clone
	// into a catalog engine's catalog (see CatalogStore); may be nil.
	Restarter Restarter
	// Voices lists the cloned voices of the root and handles cloning; may
	// be nil (only the engine's voices then).
	Voices VoiceStore
	// BuiltinVoice is the name the model's built-in voice is served under:
	// the engine's voice when a request names none (its --default-voice,
	// else the model's own). Empty serves it under no name.
	BuiltinVoice string
	// VoiceAliases maps names a client may send (OpenAI's "alloy", say) to
	// voices served here (an engine voice, a clone or the built-in voice).
	VoiceAliases map[string]string
	// VoiceOptions are the transcript rules for references.
	VoiceOptions *voices.Options
	// Prompt counts a request's prompt tokens and refuses one longer than
	// the model takes (a 400); nil skips the check.
	Prompt *prompt.Builder
	// FFmpeg is the ffmpeg binary for mp3, opus, flac and aac; empty
	// offers wav and pcm only.
	FFmpeg string
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger

	// Addr is the address the server is bound to (host:port); a request
	// whose Host names something else is refused (DNS rebinding). Empty
	// takes every Host.
	Addr string
	// AllowHosts are more names a request's Host may give ("*": any).
	AllowHosts []string
	// AllowOrigins are the web origins (scheme://host[:port], "*": any)
	// whose pages may call the API; they get CORS headers. Browser
	// requests of other origins are refused.
	AllowOrigins []string
	// StallTimeout is how long a client may accept no part of its reply
	// before it is cut and its synthesis cancelled (default
	// DefaultStallTimeout).
	StallTimeout time.Duration
	// LiveIdle is how long a /v1/tts/live session waits for the client's
	// next event (default DefaultLiveIdle).
	LiveIdle time.Duration
	// Uploads are the limits of POST /v1/voices.
	Uploads UploadLimits
	// Transcribe, when set, gives the words spoken in a clip file, for the
	// page's clip check (the clone pipeline has its own).
	Transcribe func(ctx context.Context, path, name string) (string, error)
	// Qualification, when set, is reported per model in GET /v1/models
	// ("qualified" and "qualification"; while qualified, "intelligibility"
	// and "wer" when the source gives them).
	Qualification QualificationSource
	// RequireQualified answers speech requests 503 unless Qualification
	// says the host is qualified.
	RequireQualified bool
	// Keys, when it holds any, are the API keys every route but /health,
	// /ready and the page's shell needs, each route a scope (see
	// SetKeys for a reload). Nil or empty: no key is asked for.
	Keys *apikey.Set
	// AllowInlineReferences lets a speech request carry references of
	// its own (raw codes): without keys, any request; with keys, one of a
	// key of scope speak (scope voices may send them anyway).
	AllowInlineReferences bool
}

// DefaultMaxQueue is the queue's bound drama serve gives its pool by
// default (--max-queue).
const DefaultMaxQueue = 32

// Server is the HTTP API. Create it with New; it is safe for concurrent use.
type Server struct {
	cfg     Config
	caps    atomic.Pointer[engine.Capabilities]
	pool    *pool.Pool
	metrics *metrics
	log     *slog.Logger

	hosts     *hostcheck.Checker // what a request's Host may name
	cloneSlot *upload.Slot       // one clone at a time
	keys      atomic.Pointer[apikey.Set]
	refs      *refCache // inline references of POST /v1/tts, made once

	inFlight atomic.Int64 // requests being answered, probes left out
	lastSeen atomic.Int64 // when the last of them began or ended (UnixNano)

	voicesMu     sync.Mutex
	engineVoices map[string]string // voice id -> origin
	voicesAt     time.Time
}

// New returns a Server for cfg over the engines of p: each speech request
// waits in p's queue for one of them (p's MaxQueue bounds it), and the
// calls that make no speech (voices, clones) go to any of them.
func New(p *pool.Pool, cfg Config) *Server {
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	cfg.Uploads = cfg.Uploads.withDefaults()
	if cfg.QueueTimeout <= 0 {
		cfg.QueueTimeout = 5 * time.Minute
	}
	if cfg.Model == "" {
		cfg.Model = "drama-3"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, pool: p, log: log, cloneSlot: upload.NewSlot(10 * time.Second), refs: newRefCache(maxCachedRefs, maxCachedRefBytes)}
	s.hosts = hostcheck.New(cfg.Addr, cfg.AllowHosts)
	s.SetCapabilities(cfg.Caps)
	if cfg.Keys.Len() > 0 {
		s.keys.Store(cfg.Keys)
	}
	s.metrics = newMetrics(s.pool)
	return s
}

// SetCapabilities records the engine's capabilities (from Describe), which
// decide what a request may ask for.
func (s *Server) SetCapabilities(c engine.Capabilities) { s.caps.Store(&c) }

func (s *Server) capabilities() engine.Capabilities { return *s.caps.Load() }

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/speech", s.handleSpeech)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{id}", s.handleModel)
	mux.HandleFunc("GET /v1/voices", s.handleListVoices)
	mux.HandleFunc("POST /v1/voices", s.handleCreateVoice)
	mux.HandleFunc("DELETE /v1/voices/{id}", s.handleDeleteVoice)
	s.fishRoutes(mux)
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /ready", s.handleReady)
	mux.HandleFunc("GET /metrics", s.metrics.serve)
	webui.New(webui.Config{UploadDir: s.cfg.Uploads.Dir, MaxClipBytes: s.cfg.Uploads.MaxClipBytes, MaxClips: s.cfg.Uploads.MaxClips, MaxRequestBytes: s.cfg.Uploads.MaxRequestBytes,
		StallTimeout: s.cfg.StallTimeout, UploadTimeout: s.cfg.Uploads.Timeout, Wait: s.cfg.Uploads.Wait, FFmpeg: s.cfg.FFmpeg, Transcribe: s.cfg.Transcribe}).Register(mux)
	return s.counted(s.withRequestID(s.guard(s.authorize(mux, s.withStallCut(jsonNotFound(mux))))))
}

// counted counts the requests being answered, for WaitIdle; the probes of
// a load balancer or of Kubernetes (GET /health, /ready, /metrics) are left
// out, so that they never hold up a stop.
func (s *Server) counted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && (r.URL.Path == "/health" || r.URL.Path == "/ready" || r.URL.Path == "/metrics") {
			next.ServeHTTP(w, r)
			return
		}
		s.inFlight.Add(1)
		s.lastSeen.Store(time.Now().UnixNano())
		defer func() {
			s.lastSeen.Store(time.Now().UnixNano())
			s.inFlight.Add(-1)
		}()
		next.ServeHTTP(w, r)
	})
}

type ctxKey struct{}

// withRequestID gives every request an id, echoed as X-Request-Id (a
// client's own X-Request-Id is kept when it is short and printable).
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !printableID(id) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = "req_" + hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		tw := &traced{ResponseWriter: w}
		// deferred, so that a reply cut short (its handler panics with
		// http.ErrAbortHandler) reports its outcome too
		defer func() { reportOutcome(r.Context(), tw.outcome) }()
		next.ServeHTTP(tw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, id)))
		if tw.detail != nil {
			s.logDetail(id, tw.detail)
		}
	})
}

func printableID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// status is the state of the engines as one: ready while any is.
func (s *Server) status() supervise.Status { return s.pool.Status() }

// handleHealth answers 200 while the server can serve or will soon (the
// engine ready, starting or being restarted), and 503 once the engine has
// failed to start again MaxRestarts times in a row (attempts go on, and
// /health turns 200 again when one succeeds), so that a load balancer takes
// the host out.
func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	st := s.status()
	if st.Phase == supervise.PhaseFailed {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "failed", "phase": st.Phase, "message": st.Message, "restarts": st.Restarts})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "phase": string(st.Phase)})
}

// handleReady answers 200 while at least one engine is ready, else 503,
// and 503 once the server is stopping (Drain), so that a load balancer's
// health check takes the host out before it goes; the body is the
// engines' state as one, with how many engines are ready and each
// engine's own under its name (per_engine, one entry or several). An
// engine unloaded for idleness (drama serve --keep-alive) is ready: the
// next request loads it and waits for the load; the phase and "loaded"
// tell the two apart.
func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	st := s.status()
	if s.pool.Draining() {
		st.Phase, st.Progress, st.Ready = supervise.PhaseStopping, 0, false
		st.Message = "the server is stopping: it finishes the requests it holds and takes no more"
	}
	code := http.StatusOK
	if !st.Ready {
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "5")
	}
	body := Readiness{Status: st, Engines: s.pool.Len(), PerEngine: s.pool.Engines()}
	for _, e := range body.PerEngine {
		if e.Ready {
			body.EnginesReady++
		}
	}
	writeJSON(w, code, body)
}

func (s *Server) model() map[string]any {
	m := map[string]any{"id": s.cfg.Model, "object": "model", "owned_by": "fishaudio", "created": 0}
	if q, ok := s.qualification(); ok {
		m["qualified"] = q.State == Qualified
		m["qualification"] = q.State
		if q.State == Qualified && q.Intelligibility != "" {
			m["intelligibility"] = q.Intelligibility
		}
		if q.State == Qualified && q.WER != nil {
			m["wer"] = *q.WER
		}
	}
	return m
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{s.model()}})
}

// handleModel is GET /v1/models/{id}: the served model, or a 404.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != s.cfg.Model {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("the model %q is not served here: this server serves %q (GET /v1/models)", id, s.cfg.Model)})
		return
	}
	writeJSON(w, http.StatusOK, s.model())
}

// DrainRetryAfter is the Retry-After of the 503 answered to queued requests
// when the server stops.
const DrainRetryAfter = 10 * time.Second

// Drain begins a shutdown: GET /ready answers 503 (phase "stopping") from
// now on while GET /health still answers 200, and every request waiting for
// the engine, and every later one that would wait, is answered 503 with
// Retry-After and Connection: close at once, rather than being cut when the
// grace period ends; the synthesis holding the engine goes on, and a
// request that finds the engine free is still served.
func (s *Server) Drain() {
	s.pool.Drain()
}

// WaitIdle returns once no request is being answered and none has begun
// or ended for quiet (GET /health, /ready and /metrics are not counted),
// or with ctx's error when ctx ends first. After Drain it tells when the requests
// in flight are done and a load balancer has stopped sending more: one
// that still hands this server a request as the last one ends shows as a
// request begun within quiet.
func (s *Server) WaitIdle(ctx context.Context, quiet time.Duration) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for s.inFlight.Load() > 0 || time.Since(time.Unix(0, s.lastSeen.Load())) < quiet {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func (s *Server) draining() *apiError {
	return unavailable("server_stopping", DrainRetryAfter, "the server is stopping: retry in a moment, or at another server")
}
