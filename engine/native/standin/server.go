package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/internal/wait"
)

// Frame limits of the two builds.
const (
	DefaultMaxFrames = 1024 // CUDA server default for --max-frames
	MetalMaxFrames   = 8190 // the most the Metal build allows
)

// DefaultBusyAfterCancel is how long the server keeps answering 503 after a
// client cancelled a synthesis.
const DefaultBusyAfterCancel = 200 * time.Millisecond

// Options configure a stand-in server.
type Options struct {
	// Metal makes it behave as the Metal build: catalog voices in
	// drama3-http-voice/1, references in a request refused, no long form,
	// max_frames up to 8190.
	Metal bool
	// MaxFrames is the server's frame limit; 0 means 1024 (8190 on Metal).
	MaxFrames int
	// LongForm splits input over 500 characters into segments.
	LongForm bool
	// Voices are the voices served, by id; DefaultVoice is used when a
	// request names none.
	Voices       map[string]Voice
	DefaultVoice string
	// BusyAfterCancel is the 503 window after a cancel; 0 means 200 ms,
	// negative none.
	BusyAfterCancel time.Duration
	// RTF paces the output: wall seconds per second of audio (0: no pacing).
	RTF float64
	// ChunkFrames is the frames per stream chunk; 0 means 1.
	ChunkFrames int
	// Crash is called on MarkerCrash after the first chunk was sent.
	Crash func()
	// Prefill is the time a voice not in the prefix cache costs before its
	// first audio, as the engine prefills a voice's references (0: none).
	Prefill time.Duration
	// PrefixCache is how many voices the prefix cache keeps, least
	// recently used out first; 0 means DefaultPrefixCache, negative none
	// (every voice is cold).
	PrefixCache int
	// Logf, when set, receives a line for each prefill.
	Logf func(format string, args ...any)
	// Noise makes it a broken engine that sends well-formed noise, as
	// loud and as long as its speech, which carries no text (SpokenText
	// finds none): valid and deterministic audio no one could understand.
	Noise bool
}

// DefaultPrefixCache is how many voices the engine's prefix cache keeps.
const DefaultPrefixCache = 2

// Stats counts what a server did.
type Stats struct {
	Requests  int64 // speech requests received
	Completed int64 // syntheses sent to the end
	Busy      int64 // 503 answers
	Cancelled int64 // syntheses the client cancelled
	Invalid   int64 // 400 answers
	Prefills  int64 // syntheses of a voice the prefix cache did not hold
}

// Server is an http.Handler speaking the native server's contract.
type Server struct {
	opts                                          Options
	ready                                         atomic.Bool
	mu                                            sync.Mutex
	running                                       bool
	busyUntil                                     time.Time
	requests, completed, busy, cancelled, invalid atomic.Int64
	prefills                                      atomic.Int64
	warm                                          []string // the prefix cache: voice keys, most recent first
}

// NewServer returns a server that is ready at once (see SetReady).
func NewServer(opts Options) (*Server, error) {
	if opts.MaxFrames == 0 {
		opts.MaxFrames = DefaultMaxFrames
		if opts.Metal {
			opts.MaxFrames = MetalMaxFrames
		}
	}
	if opts.Metal && (opts.MaxFrames > MetalMaxFrames || opts.LongForm) {
		return nil, fmt.Errorf("standin: metal: want max frames <= %d and no long form", MetalMaxFrames)
	}
	if opts.DefaultVoice != "" {
		if _, ok := opts.Voices[opts.DefaultVoice]; !ok {
			return nil, fmt.Errorf("standin: default voice %q: not among the voices", opts.DefaultVoice)
		}
	}
	if opts.BusyAfterCancel == 0 {
		opts.BusyAfterCancel = DefaultBusyAfterCancel
	}
	if opts.PrefixCache == 0 {
		opts.PrefixCache = DefaultPrefixCache
	}
	s := &Server{opts: opts}
	s.ready.Store(true)
	return s, nil
}

// SetReady sets whether the health route answers 200 (loaded) or 503.
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	return Stats{s.requests.Load(), s.completed.Load(), s.busy.Load(), s.cancelled.Load(), s.invalid.Load(), s.prefills.Load()}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == native.HealthPath && r.Method == http.MethodGet:
		s.health(w)
	case r.URL.Path == native.SpeechPath && r.Method == http.MethodPost:
		s.speech(w, r)
	case r.URL.Path == native.SpeechPath || r.URL.Path == native.HealthPath:
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
	default:
		writeError(w, http.StatusNotFound, "no route "+r.URL.Path)
	}
}

func (s *Server) health(w http.ResponseWriter) {
	if !s.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, "loading")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"ok"}`)
}

func (s *Server) speech(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if !s.ready.Load() {
		s.refuse(w, http.StatusServiceUnavailable, "model is loading")
		return
	}
	req, err := decodeRequest(r.Body)
	if err == nil {
		err = s.check(req)
	}
	if err != nil {
		s.refuse(w, http.StatusBadRequest, err.Error())
		return
	}
	if !s.acquire() {
		s.refuse(w, http.StatusServiceUnavailable, "busy: one synthesis at a time")
		return
	}
	out := outcomeFailed
	defer func() { s.release(out) }()
	out = s.synthesize(w, r.Context(), req)
}

// outcome is how a synthesis ended.
type outcome int

const (
	outcomeDone outcome = iota
	outcomeCancelled
	outcomeFailed
)

func (s *Server) refuse(w http.ResponseWriter, code int, msg string) {
	if code == http.StatusBadRequest {
		s.invalid.Add(1)
	} else {
		s.busy.Add(1)
	}
	writeError(w, code, msg)
}

func (s *Server) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running || time.Now().Before(s.busyUntil) {
		return false
	}
	s.running = true
	return true
}

func (s *Server) release(out outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
	switch out {
	case outcomeCancelled:
		s.cancelled.Add(1)
		if s.opts.BusyAfterCancel > 0 {
			s.busyUntil = time.Now().Add(s.opts.BusyAfterCancel)
		}
	case outcomeDone:
		s.completed.Add(1)
	}
}

func decodeRequest(r io.Reader) (*native.SpeechRequest, error) {
	dec := json.NewDecoder(io.LimitReader(r, 16<<20))
	dec.DisallowUnknownFields()
	var req native.SpeechRequest
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("request body: %v", err)
	}
	return &req, nil
}

// check applies the server's own rules on top of the shared validation.
func (s *Server) check(req *native.SpeechRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	switch {
	case req.Speed != nil && *req.Speed != 1:
		return fmt.Errorf("speed: only 1 is supported, got %g", *req.Speed)
	case req.Preset != "":
		return fmt.Errorf("preset: not supported")
	case strings.ContainsAny(req.Instructions, "[]<>\r\n"):
		return fmt.Errorf("instructions: brackets, tags and line breaks are not allowed")
	case req.MaxFrames > s.opts.MaxFrames:
		return fmt.Errorf("max_frames: want at most %d, got %d", s.opts.MaxFrames, req.MaxFrames)
	case s.opts.Metal && len(req.References) > 0:
		return fmt.Errorf("references: not accepted by this server; publish the voice to the catalog")
	case s.opts.Metal && req.LongForm != nil && *req.LongForm:
		return fmt.Errorf("long_form: not supported by this server")
	}
	if _, err := s.voiceKey(req); err != nil {
		return err
	}
	return nil
}

// voiceKey identifies the voice and references of a request for the seed.
func (s *Server) voiceKey(req *native.SpeechRequest) (string, error) {
	name := req.Voice
	if name == "" {
		name = s.opts.DefaultVoice
	}
	var key bytes.Buffer
	if name != "" {
		v, ok := s.opts.Voices[name]
		if !ok {
			return "", fmt.Errorf("voice %q: not found; available: %s", name, s.voiceList())
		}
		key.WriteString(v.Key)
	}
	for _, ref := range req.References {
		b, _ := json.Marshal(ref)
		key.Write(b)
	}
	if req.Instructions != "" {
		key.WriteString("\x00[" + req.Instructions + "]")
	}
	return key.String(), nil
}

func (s *Server) voiceList() string {
	ids := make([]string, 0, len(s.opts.Voices))
	for id := range s.opts.Voices {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return "(none)"
	}
	return strings.Join(ids, ", ")
}

func (s *Server) planFor(req *native.SpeechRequest) plan {
	key, _ := s.voiceKey(req)
	limit := s.opts.MaxFrames
	if req.MaxFrames > 0 {
		limit = req.MaxFrames
	}
	longForm := s.opts.LongForm && len([]rune(req.Input)) > 500
	if req.LongForm != nil && !*req.LongForm {
		longForm = false
	}
	return makePlan(req.Input, key, limit, longForm, s.opts.Noise)
}

func segmentsHeader(p *plan) string {
	if len(p.segments) == 0 {
		return ""
	}
	parts := make([]string, 0, len(p.segments))
	for _, f := range p.segments[1:] {
		parts = append(parts, strconv.Itoa(f*native.SamplesPerFrame))
	}
	return strconv.Itoa(len(p.segments)) + ";" + strings.Join(parts, ",")
}

// synthesize sends the audio and says how it ended.
func (s *Server) synthesize(w http.ResponseWriter, ctx context.Context, req *native.SpeechRequest) outcome {
	p := s.planFor(req)
	fault := ""
	for _, m := range []string{MarkerFail, MarkerCrash} {
		if strings.Contains(req.Input, m) {
			fault = m
		}
	}
	if !s.prefill(ctx, req) {
		return outcomeCancelled
	}
	if req.Stream {
		return s.stream(w, ctx, &p, fault)
	}
	return s.whole(w, ctx, &p, req.ResponseFormat, fault)
}

func (s *Server) whole(w http.ResponseWriter, ctx context.Context, p *plan, format, fault string) outcome {
	pcm := p.pcm()
	if !s.pace(ctx, time.Now(), p.total) {
		return outcomeCancelled
	}
	body := pcm
	w.Header().Set("Content-Type", "application/octet-stream")
	if format != native.FormatPCM {
		body = append(native.WAVHeader(len(pcm)), pcm...)
		w.Header().Set("Content-Type", "audio/wav")
	}
	w.Header().Set(native.HeaderFinishReason, p.reason)
	if h := segmentsHeader(p); h != "" {
		w.Header().Set(native.HeaderLongFormSegments, h)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if fault != "" {
		w.Write(body[:len(body)/2])
		s.fault(w, fault)
	}
	if _, err := w.Write(body); err != nil {
		return outcomeCancelled
	}
	return outcomeDone
}

func (s *Server) stream(w http.ResponseWriter, ctx context.Context, p *plan, fault string) outcome {
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Trailer", native.HeaderFinishReason+", "+native.HeaderLongFormSegments)
	w.WriteHeader(http.StatusOK)
	per := max(s.opts.ChunkFrames, 1)
	buf := make([]byte, per*frameBytes)
	start := time.Now()
	for i := 0; i < p.total; i += per {
		n := min(per, p.total-i)
		for k := 0; k < n; k++ {
			p.frame(buf[k*frameBytes:], i+k)
		}
		if !s.pace(ctx, start, i+n) {
			return outcomeCancelled
		}
		if _, err := w.Write(buf[:n*frameBytes]); err != nil {
			return outcomeCancelled
		}
		http.NewResponseController(w).Flush()
		if fault != "" {
			s.fault(w, fault)
		}
	}
	if p.reason != native.FinishStop {
		h.Set(native.HeaderFinishReason, p.reason)
	}
	if v := segmentsHeader(p); v != "" {
		h.Set(native.HeaderLongFormSegments, v)
	}
	if err := http.NewResponseController(w).Flush(); err != nil || ctx.Err() != nil {
		return outcomeCancelled
	}
	return outcomeDone
}

// prefixKey names what the prefix cache holds for a request: its voice and
// its references (instructions are spoken after the prefix).
func (s *Server) prefixKey(req *native.SpeechRequest) string {
	name := req.Voice
	if name == "" {
		name = s.opts.DefaultVoice
	}
	key := "voice:" + name
	for _, ref := range req.References {
		b, _ := json.Marshal(ref)
		key += "\x00" + string(b)
	}
	return key
}

// prefixName names what a request prefills, for the log: its voice (the
// built-in one when it names none) and how many references it brings.
func (s *Server) prefixName(req *native.SpeechRequest) string {
	name := req.Voice
	if name == "" {
		name = s.opts.DefaultVoice
	}
	what := "the built-in voice"
	if name != "" {
		what = "voice " + name
	}
	switch n := len(req.References); n {
	case 0:
	case 1:
		what += " with 1 reference"
	default:
		what += fmt.Sprintf(" with %d references", n)
	}
	return what
}

// prefill models the prefix cache: a voice among the last PrefixCache
// spoken starts at once; another waits Prefill first and enters the cache,
// the least recently used voice leaving it. False when the client went
// away meanwhile. Only one synthesis runs at a time, so the cache needs no
// lock of its own beyond the server's.
func (s *Server) prefill(ctx context.Context, req *native.SpeechRequest) bool {
	key := s.prefixKey(req)
	s.mu.Lock()
	i := slices.Index(s.warm, key)
	if i >= 0 {
		s.warm = slices.Delete(s.warm, i, i+1)
	}
	if keep := s.opts.PrefixCache; keep > 0 {
		s.warm = slices.Insert(s.warm, 0, key)
		s.warm = s.warm[:min(len(s.warm), keep)]
	}
	s.mu.Unlock()
	if i >= 0 {
		return true
	}
	s.prefills.Add(1)
	if s.opts.Logf != nil {
		s.opts.Logf("standin: prefill: %s is not in the prefix cache (%v)", s.prefixName(req), s.opts.Prefill)
	}
	return wait.Sleep(ctx, s.opts.Prefill) == nil && ctx.Err() == nil
}

// pace waits until frames of audio are due under the RTF; false when the
// client went away meanwhile.
func (s *Server) pace(ctx context.Context, start time.Time, frames int) bool {
	if ctx.Err() != nil {
		return false
	}
	if s.opts.RTF <= 0 {
		return true
	}
	audio := time.Duration(float64(frames*native.SamplesPerFrame) / native.SampleRate * float64(time.Second))
	return wait.Sleep(ctx, time.Until(start.Add(time.Duration(float64(audio)*s.opts.RTF)))) == nil
}

// fault ends the reply without completing it; for MarkerCrash it calls
// Options.Crash first.
func (s *Server) fault(w http.ResponseWriter, marker string) {
	http.NewResponseController(w).Flush()
	if marker == MarkerCrash && s.opts.Crash != nil {
		s.opts.Crash()
	}
	panic(http.ErrAbortHandler)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Write(b)
}

// Running is a stand-in server listening on a loopback port.
type Running struct {
	*Server
	Addr string // host:port
	srv  *http.Server
	ln   net.Listener
}

// Listen starts a stand-in server on 127.0.0.1 (port 0 picks a free one).
func Listen(opts Options, port int) (*Running, error) {
	s, err := NewServer(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("standin: listen: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: discardLog()}
	go srv.Serve(ln)
	return &Running{Server: s, Addr: ln.Addr().String(), srv: srv, ln: ln}, nil
}

// Close stops listening and drops every connection.
func (r *Running) Close() error { return r.srv.Close() }

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
