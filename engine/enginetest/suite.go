package enginetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
)

// Config tells Run how to reach an engine and what to ask of it.
type Config struct {
	// Engine is the engine under test, not yet started. Run starts it,
	// stops it, and leaves closing the plugin to the caller.
	Engine engine.Engine
	// Start is the request Run starts the engine with.
	Start engine.StartRequest
	// Voice is a voice the engine serves; empty uses the default voice.
	Voice string
	// Text is a short text to speak; empty uses a built-in sentence.
	Text string
	// LengthFrames is a max_frames small enough to clip Text (default 2).
	LengthFrames int
	// SilenceText is a text whose synthesis ends in silence; empty skips
	// that check.
	SilenceText string
	// Clips are encoded when the engine can encode; empty skips encode.
	Clips []engine.Clip
	// Crash makes the native server, whose pid Health reported, die as a
	// crash would. The default sends SIGKILL to pid. SkipCrash skips the
	// crash step.
	Crash     func(pid int) error
	SkipCrash bool
	// Timeout bounds each step (default 30 s).
	Timeout time.Duration
}

// Run runs the conformance suite against cfg.Engine: describe; start with
// progress; health; voices; whole and streamed synthesis equal byte for
// byte; finish reasons; invalid input gives the invalid kind; a cancel
// mid-stream and an immediate next request that succeeds (busy never
// reaches the caller); a crash gives an engine-failed error and a restart
// works; encode; stop leaves no process. Steps run in order on one engine.
func Run(t *testing.T, cfg Config) {
	s := &suite{cfg: cfg.withDefaults(), goneWait: 5 * time.Second}
	steps := []struct {
		name string
		fn   func(tb)
	}{
		{"Describe", s.describe}, {"Start", s.start}, {"Health", s.health}, {"Voices", s.voices},
		{"WholeEqualsStream", s.wholeEqualsStream}, {"FinishReasons", s.finishReasons},
		{"InvalidInput", s.invalidInput}, {"CancelThenNext", s.cancelThenNext},
		{"CrashAndRestart", s.crashAndRestart}, {"Encode", s.encode}, {"StopLeavesNoProcess", s.stop},
	}
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) { st.fn(t) }) && (st.name == "Describe" || st.name == "Start") {
			t.Fatalf("%s failed: the remaining steps need it", st.name)
		}
	}
}

func (c Config) withDefaults() Config {
	if c.Text == "" {
		c.Text = "The lighthouse keeper counted the ships until the fog rolled in."
	}
	if c.LengthFrames == 0 {
		c.LengthFrames = 2
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Crash == nil {
		c.Crash = killPID
	}
	return c
}

// tb is the part of testing.TB the steps use, so the suite's own tests
// can watch a step fail.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	Cleanup(func())
}

type suite struct {
	cfg      Config
	goneWait time.Duration // how long a stopped process may take to go
	desc     engine.Description
	pid      int
}

func (s *suite) ctx(t tb) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) describe(t tb) {
	d, err := s.cfg.Engine.Describe(s.ctx(t))
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if d.Name == "" || d.Version == "" || d.OS == "" || d.Arch == "" {
		t.Errorf("Describe: want name, version, OS and arch, got %+v", d)
	}
	if d.APIVersion != engine.APIVersion {
		t.Errorf("Describe: API version: want %d, got %d", engine.APIVersion, d.APIVersion)
	}
	if len(d.Variants) == 0 {
		t.Errorf("Describe: no variants")
	}
	s.desc = d
}

// start starts the engine and checks the order of its lifecycle events.
func (s *suite) start(t tb) {
	var events []engine.LifecycleEvent
	err := s.cfg.Engine.Start(s.ctx(t), s.cfg.Start, func(e engine.LifecycleEvent) { events = append(events, e) })
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	checkLifecycle(t, events)
	if n := len(events); n > 0 {
		s.pid = events[n-1].PID
	}
}

// checkLifecycle wants phases that never go back, a spawned event with a
// pid, at least one loading event, progress within 0..1 when known, and
// ready last.
func checkLifecycle(t tb, events []engine.LifecycleEvent) {
	if len(events) == 0 || events[len(events)-1].Phase != engine.PhaseReady {
		t.Fatalf("Start events: want the last to be ready, got %v", phases(events))
	}
	last, spawned, loading := engine.PhaseUnknown, false, false
	for _, e := range events {
		loading = loading || e.Phase == engine.PhaseLoading
		if e.Phase < last {
			t.Errorf("Start events: phase went back: %v", phases(events))
		}
		last = e.Phase
		spawned = spawned || (e.Phase == engine.PhaseSpawned && e.PID > 0)
		if e.Progress > 1 || (e.Phase == engine.PhaseLoading && e.Progress < 0 && e.Progress != -1) {
			t.Errorf("Start events: progress %v out of range", e.Progress)
		}
	}
	if !spawned || !loading {
		t.Errorf("Start events: want spawned (with a pid) and loading events, got %v", phases(events))
	}
}

func phases(events []engine.LifecycleEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Phase.String()
	}
	return out
}

func (s *suite) health(t tb) {
	h, err := s.cfg.Engine.Health(s.ctx(t))
	if err != nil {
		t.Fatalf("Health: %v", err)
	}
	if !h.Ready || h.Phase != engine.PhaseReady {
		t.Errorf("Health: want ready, got %+v", h)
	}
	if h.PID <= 0 {
		t.Errorf("Health: want the native pid, got %d", h.PID)
	}
	s.pid = h.PID
}

func (s *suite) voices(t tb) {
	vs, err := s.cfg.Engine.Voices(s.ctx(t))
	if err != nil {
		t.Fatalf("Voices: %v", err)
	}
	if s.cfg.Voice == "" {
		return
	}
	for _, v := range vs {
		if v.ID == s.cfg.Voice {
			return
		}
	}
	t.Errorf("Voices: want %q among them, got %+v", s.cfg.Voice, vs)
}

// Result is one synthesis read to its end.
type Result struct {
	Header engine.AudioHeader
	PCM    []byte
	Chunks int
	Final  engine.Final
}

// Synthesize runs req on e and reads the stream to its end (Read).
func Synthesize(ctx context.Context, e engine.Engine, req engine.SynthesisRequest) (Result, error) {
	as, err := e.Synthesize(ctx, req)
	if err != nil {
		return Result{}, err
	}
	defer as.Close()
	return Read(as)
}

// Read reads as to its end, checking that every chunk holds whole samples
// within engine.MaxChunk; the caller closes as.
func Read(as engine.AudioStream) (Result, error) {
	r := Result{Header: as.Header()}
	for {
		p, err := as.Next()
		if errors.Is(err, io.EOF) {
			r.Final = as.Final()
			return r, nil
		}
		if err != nil {
			return r, err
		}
		if len(p)%2 != 0 || len(p) > engine.MaxChunk || len(p) == 0 {
			return r, engine.Errorf(engine.KindFailed, "chunk %d: want 2..%d bytes, even, got %d", r.Chunks, engine.MaxChunk, len(p))
		}
		r.PCM = append(r.PCM, p...)
		r.Chunks++
	}
}

func (s *suite) request(stream bool) engine.SynthesisRequest {
	return engine.SynthesisRequest{Input: s.cfg.Text, Voice: s.cfg.Voice, Stream: stream, RequestID: "conformance"}
}

func (s *suite) wholeEqualsStream(t tb) {
	ctx := s.ctx(t)
	whole, err := Synthesize(ctx, s.cfg.Engine, s.request(false))
	if err != nil {
		t.Fatalf("whole: %v", err)
	}
	checkAudio(t, "whole", whole)
	if !s.desc.Capabilities.Stream {
		return
	}
	streamed, err := Synthesize(ctx, s.cfg.Engine, s.request(true))
	if err != nil {
		t.Fatalf("streamed: %v", err)
	}
	checkAudio(t, "streamed", streamed)
	if !bytes.Equal(whole.PCM, streamed.PCM) {
		t.Errorf("whole and streamed audio differ: %d and %d bytes", len(whole.PCM), len(streamed.PCM))
	}
}

func checkAudio(t tb, what string, r Result) {
	h := r.Header
	if h.SampleRate != engine.SampleRate || h.Channels != engine.Channels || h.BitsPerSample != engine.BitsPerSample {
		t.Errorf("%s: header: want %d Hz, %d channel, %d bits, got %+v", what, engine.SampleRate, engine.Channels, engine.BitsPerSample, h)
	}
	if err := h.CheckEnd(int64(len(r.PCM)/2), r.Final); err != nil {
		t.Errorf("%s: %v", what, err)
	}
	if len(r.PCM) == 0 {
		t.Errorf("%s: no audio", what)
	}
	if r.Final.Reason != engine.FinishStop {
		t.Errorf("%s: finish reason: want stop, got %q", what, r.Final.Reason)
	}
	if r.Final.Samples != int64(len(r.PCM)/2) {
		t.Errorf("%s: final samples: want %d, got %d", what, len(r.PCM)/2, r.Final.Samples)
	}
}

func (s *suite) finishReasons(t tb) {
	ctx := s.ctx(t)
	req := s.request(true)
	req.MaxFrames = s.cfg.LengthFrames
	r, err := Synthesize(ctx, s.cfg.Engine, req)
	if err != nil {
		t.Fatalf("max_frames %d: %v", req.MaxFrames, err)
	}
	if r.Final.Reason != engine.FinishLength || len(r.PCM) == 0 {
		t.Errorf("max_frames %d: want length with audio kept, got %q with %d bytes", req.MaxFrames, r.Final.Reason, len(r.PCM))
	}
	if s.cfg.SilenceText == "" {
		return
	}
	req = s.request(true)
	req.Input = s.cfg.SilenceText
	if r, err = Synthesize(ctx, s.cfg.Engine, req); err != nil {
		t.Fatalf("silence: %v", err)
	}
	if r.Final.Reason != engine.FinishSilence {
		t.Errorf("silence: want silence, got %q", r.Final.Reason)
	}
}

func (s *suite) invalidInput(t tb) {
	bad := map[string]engine.SynthesisRequest{
		"empty input":   {Input: ""},
		"long input":    {Input: string(bytes.Repeat([]byte("a"), 4097))},
		"unknown voice": {Input: s.cfg.Text, Voice: "no-such-voice-0123"},
		"speed":         {Input: s.cfg.Text, Speed: 2},
		"instructions":  {Input: s.cfg.Text, Instructions: "[whisper]\nloud"},
	}
	for name, req := range bad {
		as, err := s.cfg.Engine.Synthesize(s.ctx(t), req)
		if err == nil {
			as.Close()
			t.Errorf("%s: want an invalid-input error, got none", name)
			continue
		}
		if !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("%s: want an invalid-input error, got %v", name, err)
		}
	}
}

// cancelThenNext cancels a stream after its first chunk and at once asks
// for the next synthesis, which must succeed: the engine's busy window
// after a cancel is the engine's to wait out.
func (s *suite) cancelThenNext(t tb) {
	ctx, cancel := context.WithCancel(s.ctx(t))
	as, err := s.cfg.Engine.Synthesize(ctx, s.request(true))
	if err != nil {
		t.Fatalf("first: %v", err)
	}
	if _, err := as.Next(); err != nil {
		t.Fatalf("first chunk: %v", err)
	}
	cancel()
	if _, err := as.Next(); err == nil {
		// A chunk already in flight may still arrive; the stream must not
		// end cleanly, though.
		for err == nil {
			_, err = as.Next()
		}
		if errors.Is(err, io.EOF) {
			t.Errorf("cancelled stream ended cleanly")
		}
	}
	as.Close()
	r, err := Synthesize(s.ctx(t), s.cfg.Engine, s.request(true))
	if err != nil {
		t.Fatalf("next after cancel: %v", err)
	}
	checkAudio(t, "next after cancel", r)
}

// crashAndRestart kills the native server while a stream is open, wants an
// engine-failed error, then restarts and synthesizes.
func (s *suite) crashAndRestart(t tb) {
	if s.cfg.SkipCrash {
		t.Skip("crash step skipped")
	}
	ctx := s.ctx(t)
	long := s.request(true)
	long.Input = strings.Repeat(s.cfg.Text+" ", 1+600/len(s.cfg.Text))
	as, err := s.cfg.Engine.Synthesize(ctx, long)
	if err != nil {
		t.Fatalf("synthesize: %v", err)
	}
	defer as.Close()
	if _, err := as.Next(); err != nil {
		t.Fatalf("first chunk: %v", err)
	}
	if err := s.cfg.Crash(s.pid); err != nil {
		t.Fatalf("crash: pid %d: %v", s.pid, err)
	}
	if err := drain(as); !errors.Is(err, engine.ErrFailed) {
		t.Errorf("stream across a crash: want an engine-failed error, got %v", err)
	}
	as.Close()
	s.waitNotReady(t)
	if err := s.cfg.Engine.Start(ctx, s.cfg.Start, nil); err != nil {
		t.Fatalf("restart: %v", err)
	}
	r, err := Synthesize(ctx, s.cfg.Engine, s.request(false))
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	checkAudio(t, "after restart", r)
	if h, err := s.cfg.Engine.Health(ctx); err == nil {
		s.pid = h.PID
	}
}

func drain(as engine.AudioStream) error {
	for {
		if _, err := as.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// waitNotReady waits until Health no longer reports ready after a crash.
func (s *suite) waitNotReady(t tb) {
	deadline := time.Now().Add(s.cfg.Timeout)
	for time.Now().Before(deadline) {
		h, err := s.cfg.Engine.Health(s.ctx(t))
		if err != nil || !h.Ready {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("Health: still ready %s after the native server was killed", s.cfg.Timeout)
}

func (s *suite) encode(t tb) {
	if !s.desc.Capabilities.Encode || len(s.cfg.Clips) == 0 {
		t.Skip("the engine does not encode, or no clips given")
	}
	var seen int
	out, err := s.cfg.Engine.Encode(s.ctx(t), engine.EncodeRequest{Install: s.cfg.Start.Install, Clips: s.cfg.Clips},
		func(engine.EncodeProgress) { seen++ })
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if len(out) != len(s.cfg.Clips) {
		t.Fatalf("Encode: want %d clips, got %d", len(s.cfg.Clips), len(out))
	}
	for i, c := range out {
		checkCodes(t, s.cfg.Clips[i].ID, c)
	}
	if seen == 0 {
		t.Errorf("Encode: no progress reported")
	}
}

func checkCodes(t tb, id string, c engine.EncodedClip) {
	if c.ClipID != id || len(c.Codes) != engine.NumCodebooks || c.Frames <= 0 {
		t.Fatalf("clip %q: want id %q, %d codebooks and frames, got id %q, %d codebooks, %d frames", id, id, engine.NumCodebooks, c.ClipID, len(c.Codes), c.Frames)
	}
	for cb, row := range c.Codes {
		limit := 1024
		if cb == 0 {
			limit = 4096
		}
		if len(row) != c.Frames {
			t.Fatalf("clip %q codebook %d: want %d frames, got %d", id, cb, c.Frames, len(row))
		}
		for _, v := range row {
			if v < 0 || v >= limit {
				t.Fatalf("clip %q codebook %d: code %d outside 0..%d", id, cb, v, limit-1)
			}
		}
	}
}

func (s *suite) stop(t tb) {
	res, err := s.cfg.Engine.Stop(s.ctx(t), engine.StopRequest{Grace: 5 * time.Second})
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !res.WasRunning {
		t.Errorf("Stop: want was running")
	}
	if s.pid > 0 && !WaitGone(s.pid, s.goneWait) {
		t.Errorf("Stop: native process %d still running", s.pid)
	}
	h, err := s.cfg.Engine.Health(s.ctx(t))
	if err != nil || h.Ready {
		t.Errorf("Health after Stop: want not ready, got %+v, %v", h, err)
	}
	if _, err := s.cfg.Engine.Synthesize(s.ctx(t), s.request(false)); !errors.Is(err, engine.ErrNotReady) {
		t.Errorf("Synthesize after Stop: want not ready, got %v", err)
	}
}
