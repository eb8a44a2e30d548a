package enginetest

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/internal/wait"
)

// Fake is an in-memory Engine with the behaviour of a real one: a child
// process standing in for the native server, deterministic audio, finish
// reasons, one synthesis at a time, a busy window after a cancel that it
// retries itself, crashes, and encode. Tests of code built on Engine use it,
// and so does this package's own test of the suite.
type Fake struct {
	// Desc is what Describe returns.
	Desc engine.Description
	// VoiceList is what Voices returns; Synthesize refuses other voices.
	VoiceList []engine.Voice
	// SilenceMarker in a text makes its synthesis end with FinishSilence.
	SilenceMarker string
	// FramesPerRune sets the length of the audio: 1 + runes/4 frames by
	// default.
	FramesPerRune float64
	// BusyWindow is how long the engine stays busy after a cancel.
	BusyWindow time.Duration
	// FailAfterFirstChunk makes every synthesis fail after its first chunk.
	FailAfterFirstChunk bool
	// StartDelay is spent loading, reporting progress.
	StartDelay time.Duration
	// FrameDelay is spent making each frame of a streamed synthesis, as a
	// real engine makes audio over time.
	FrameDelay time.Duration
	// StartsOnce makes every Start after the first fail, as the engine of
	// a plugin whose process is gone does: a supervisor's restart must
	// open a new plugin.
	StartsOnce bool
	// Sized makes the header of a whole (not streamed) synthesis say its
	// length and finish reason before the audio, as the native engine's
	// whole replies do (engine.AudioHeader.Sized); unset, the fake speaks
	// as a plugin older than those fields.
	Sized bool

	mu        sync.Mutex
	phase     engine.Phase
	since     time.Time
	child     *exec.Cmd
	childDone chan struct{}
	lastExit  string
	busy      bool
	busyUntil time.Time
	stopping  bool
	starts    int
}

// NewFake returns a Fake with two voices and every capability.
func NewFake() *Fake {
	return &Fake{
		Desc: engine.Description{
			Name: "fake", Version: "0.0.0-test", APIVersion: engine.APIVersion,
			OS: runtime.GOOS, Arch: runtime.GOARCH, Engine: "fake", Variants: []string{"full", "nvfp4"},
			Capabilities:   engine.Capabilities{Stream: true, LongForm: true, References: true, Encode: true, MaxFrames: 1024},
			MemoryEstimate: map[string]uint64{"full": 40 << 30, "nvfp4": 20 << 30},
		},
		VoiceList: []engine.Voice{
			{ID: "narrator", Name: "Narrator", Source: "synthetic", References: 1, Frames: 100},
			{ID: "alice", Name: "Alice", Source: "consented", References: 2, Frames: 300},
		},
		SilenceMarker: "[silence-test]",
		BusyWindow:    150 * time.Millisecond,
		StartDelay:    30 * time.Millisecond,
		FrameDelay:    2 * time.Millisecond,
	}
}

// Describe returns f.Desc.
func (f *Fake) Describe(ctx context.Context) (engine.Description, error) {
	return f.Desc, ctx.Err()
}

// Start launches the child standing in for the native server and reports
// preflight, spawned, loading and ready.
func (f *Fake) Start(ctx context.Context, req engine.StartRequest, events func(engine.LifecycleEvent)) error {
	emit := func(e engine.LifecycleEvent) {
		e.Time = time.Now()
		if events != nil {
			events(e)
		}
	}
	f.mu.Lock()
	if f.starts++; f.StartsOnce && f.starts > 1 {
		f.mu.Unlock()
		return engine.Errorf(engine.KindFailed, "start: the plugin is gone")
	}
	if f.phase == engine.PhaseReady || f.phase == engine.PhaseLoading {
		f.mu.Unlock()
		return engine.Invalidf("start: the engine is already %s", f.phase)
	}
	f.setPhase(engine.PhasePreflight)
	f.mu.Unlock()
	emit(engine.LifecycleEvent{Phase: engine.PhasePreflight, Message: "checks passed", Progress: -1})
	pid, err := f.spawn()
	if err != nil {
		return failed(fmt.Errorf("start: spawn: %w", err), "")
	}
	emit(engine.LifecycleEvent{Phase: engine.PhaseSpawned, PID: pid, Progress: -1})
	if err := f.load(ctx, pid, emit); err != nil {
		return err
	}
	emit(engine.LifecycleEvent{Phase: engine.PhaseReady, PID: pid, Progress: 1, Message: "ready"})
	return nil
}

// load spends StartDelay in four steps, watching ctx and the child.
func (f *Fake) load(ctx context.Context, pid int, emit func(engine.LifecycleEvent)) error {
	f.mu.Lock()
	f.setPhase(engine.PhaseLoading)
	done := f.childDone
	f.mu.Unlock()
	for i := 1; i <= 4; i++ {
		select {
		case <-ctx.Done():
			f.Stop(context.Background(), engine.StopRequest{})
			return ctx.Err()
		case <-done:
			emit(engine.LifecycleEvent{Phase: engine.PhaseExited, PID: pid, ExitCode: -1, LogTail: "fake: killed while loading"})
			return failed(fmt.Errorf("start: the native process exited while loading"), "fake: killed while loading")
		case <-time.After(f.StartDelay / 4):
		}
		emit(engine.LifecycleEvent{Phase: engine.PhaseLoading, PID: pid, Progress: float64(i) / 4, Message: "loading weights"})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.phase != engine.PhaseLoading {
		return failed(fmt.Errorf("start: the native process exited while loading"), f.lastExit)
	}
	f.setPhase(engine.PhaseReady)
	return nil
}

// setPhase records a phase change; f.mu is held.
func (f *Fake) setPhase(p engine.Phase) {
	f.phase, f.since = p, time.Now()
}

// Health reports the phase and the child's pid.
func (f *Fake) Health(ctx context.Context) (engine.Health, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := engine.Health{Phase: f.phase, Ready: f.phase == engine.PhaseReady, Since: f.since, LastExit: f.lastExit}
	if f.child != nil {
		h.PID = f.child.Process.Pid
	}
	return h, ctx.Err()
}

// Voices returns f.VoiceList once started.
func (f *Fake) Voices(ctx context.Context) ([]engine.Voice, error) {
	if err := f.ready(); err != nil {
		return nil, err
	}
	return append([]engine.Voice(nil), f.VoiceList...), ctx.Err()
}

// ready returns a not-ready error unless the engine is ready.
func (f *Fake) ready() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.phase != engine.PhaseReady {
		msg := "the engine is " + f.phase.String()
		if f.lastExit != "" {
			msg += " (" + f.lastExit + ")"
		}
		return engine.NotReadyf("%s: start it first", msg)
	}
	return nil
}

// Crash kills the child standing in for the native server, as a crash would.
func (f *Fake) Crash() {
	f.mu.Lock()
	c := f.child
	f.mu.Unlock()
	if c != nil {
		c.Process.Kill()
	}
}

// validate refuses what the native server refuses, in its words.
func (f *Fake) validate(req engine.SynthesisRequest) error {
	n := utf8.RuneCountInString(req.Input)
	switch {
	case n < 1 || n > 4096:
		return engine.Invalidf("input: want 1 to 4096 characters, got %d", n)
	case req.Speed != 0 && req.Speed != 1:
		return engine.Invalidf("speed: want 1, got %g", req.Speed)
	case strings.ContainsAny(req.Instructions, "[]\n\r"):
		return engine.Invalidf("instructions: brackets and line breaks are not allowed")
	case req.MaxFrames < 0:
		return engine.Invalidf("max_frames: want 0 or more, got %d", req.MaxFrames)
	}
	for i, r := range req.References {
		if len(r.Codes) != engine.NumCodebooks || strings.TrimSpace(r.Text) == "" {
			return engine.Invalidf("references[%d]: want a transcript and %d codebooks, got %d", i, engine.NumCodebooks, len(r.Codes))
		}
	}
	if req.Voice == "" {
		return nil
	}
	for _, v := range f.VoiceList {
		if v.ID == req.Voice {
			return nil
		}
	}
	return engine.Invalidf("voice %q: no such voice", req.Voice)
}

// Synthesize makes the request's audio after waiting out a busy window.
func (f *Fake) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	if err := f.validate(req); err != nil {
		return nil, err
	}
	if err := f.ready(); err != nil {
		return nil, err
	}
	start := time.Now()
	retries, err := f.acquire(ctx)
	if err != nil {
		return nil, err
	}
	pcm, reason := f.render(req)
	s := &fakeStream{f: f, ctx: ctx, pcm: pcm, stream: req.Stream, final: engine.Final{
		Reason: reason, LongFormSegments: 1, BusyRetries: retries, FirstAudio: time.Since(start),
	}}
	s.header = engine.AudioHeader{SampleRate: engine.SampleRate, Channels: engine.Channels, BitsPerSample: engine.BitsPerSample}
	if f.Sized && !req.Stream {
		s.header.Sized, s.header.Samples, s.header.Reason, s.header.LongFormSegments = true, int64(len(pcm)/2), reason, 1
	}
	return s, nil
}

// acquire takes the one synthesis slot, retrying as the native client does:
// after 2 ms, then pauses doubling up to 50 ms, for 10 s.
func (f *Fake) acquire(ctx context.Context) (int, error) {
	deadline := time.Now().Add(10 * time.Second)
	pause := 2 * time.Millisecond
	for retries := 0; ; retries++ {
		f.mu.Lock()
		if !f.busy && time.Now().After(f.busyUntil) {
			f.busy = true
			f.mu.Unlock()
			return retries, nil
		}
		f.mu.Unlock()
		if time.Now().After(deadline) {
			return retries, engine.Errorf(engine.KindBusy, "synthesize: still busy after 10s")
		}
		select {
		case <-ctx.Done():
			return retries, ctx.Err()
		case <-time.After(pause):
			pause = min(2*pause, 50*time.Millisecond)
		}
	}
}

// release frees the slot; after a cancel the engine stays busy a moment.
func (f *Fake) release(cancelled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy = false
	if cancelled {
		f.busyUntil = time.Now().Add(f.BusyWindow)
	}
}

// render returns deterministic PCM for the request and its finish reason.
func (f *Fake) render(req engine.SynthesisRequest) ([]byte, engine.FinishReason) {
	per := f.FramesPerRune
	if per == 0 {
		per = 0.25
	}
	frames := 1 + int(float64(utf8.RuneCountInString(req.Input))*per)
	reason := engine.FinishStop
	if f.SilenceMarker != "" && strings.Contains(req.Input, f.SilenceMarker) {
		reason = engine.FinishSilence
	}
	if req.MaxFrames > 0 && frames > req.MaxFrames {
		frames, reason = req.MaxFrames, engine.FinishLength
	}
	return Tone(Seed(req), frames*engine.SamplesPerFrame), reason
}

// Seed hashes what decides a synthesis's audio: text, voice, instructions
// and references.
func Seed(req engine.SynthesisRequest) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%q|%q|%q", req.Input, req.Voice, req.Instructions)
	for _, r := range req.References {
		fmt.Fprintf(h, "|%q%v", r.Text, r.Codes)
	}
	return h.Sum64()
}

// Tone returns n samples of deterministic s16le PCM from seed.
func Tone(seed uint64, n int) []byte {
	out := make([]byte, 2*n)
	x := seed | 1
	for i := range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint16(out[2*i:], uint16(int16(x>>48)/4))
	}
	return out
}

// fakeStream hands out a rendered synthesis frame by frame.
type fakeStream struct {
	f      *Fake
	ctx    context.Context
	pcm    []byte
	off    int
	stream bool
	header engine.AudioHeader
	final  engine.Final
	closed bool
}

func (s *fakeStream) Header() engine.AudioHeader { return s.header }

func (s *fakeStream) Final() engine.Final { return s.final }

// Next returns one frame of audio when streaming, up to MaxChunk otherwise.
func (s *fakeStream) Next() ([]byte, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.f.ready(); err != nil {
		return nil, failed(fmt.Errorf("synthesize: the native server died mid-stream"), s.f.lastExitLocked())
	}
	if s.off >= len(s.pcm) {
		s.final.Samples = int64(len(s.pcm) / 2)
		return nil, io.EOF
	}
	if s.f.FailAfterFirstChunk && s.off > 0 {
		return nil, failed(fmt.Errorf("synthesize: injected failure after the first chunk"), "")
	}
	n := engine.MaxChunk
	if s.stream {
		n = 2 * engine.SamplesPerFrame
		if err := wait.Sleep(s.ctx, s.f.FrameDelay); err != nil {
			return nil, err
		}
	}
	end := min(s.off+n, len(s.pcm))
	p := s.pcm[s.off:end]
	s.off = end
	return p, nil
}

// Close frees the engine; a close before the end counts as a cancel.
func (s *fakeStream) Close() error {
	if !s.closed {
		s.closed = true
		s.f.release(s.off < len(s.pcm) || s.ctx.Err() != nil)
	}
	return nil
}

func (f *Fake) lastExitLocked() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastExit
}

// Encode derives codes from each clip's bytes: one frame per 2048 samples
// of the clip's data (or of the file at its path).
func (f *Fake) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	if len(req.Clips) == 0 {
		return nil, engine.Invalidf("encode: no clips")
	}
	out := make([]engine.EncodedClip, 0, len(req.Clips))
	for i, c := range req.Clips {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ec, err := encodeClip(c)
		if err != nil {
			return nil, err
		}
		if progress != nil {
			progress(engine.EncodeProgress{ClipID: c.ID, Index: i, Count: len(req.Clips), Fraction: 1, Stage: "encoded"})
		}
		out = append(out, ec)
	}
	return out, nil
}
