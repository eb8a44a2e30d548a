package enginetest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
)

// recorder is a tb that records failures, so a test can watch a step fail.
type recorder struct {
	failures []string
	cleanups []func()
	skipped  bool
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skip(...any) { r.skipped = true; runtime.Goexit() }

// step runs fn against a recorder and returns what it recorded.
func step(fn func(tb)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for i := len(r.cleanups) - 1; i >= 0; i-- {
				r.cleanups[i]()
			}
		}()
		fn(r)
	}()
	<-done
	return r
}

// broken wraps a Fake and breaks one behaviour.
type broken struct {
	*Fake
	how string
}

func (b *broken) Describe(ctx context.Context) (engine.Description, error) {
	d, err := b.Fake.Describe(ctx)
	if b.how == "api" {
		d.APIVersion = 99
	}
	return d, err
}

func (b *broken) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	switch {
	case b.how == "stream-differs" && req.Stream:
		req.Input += "!"
	case b.how == "invalid-as-failed" && req.Voice == "no-such-voice-0123":
		return nil, failed(fmt.Errorf("voice"), "")
	case b.how == "busy" && strings.Contains(req.RequestID, "conformance"):
		if as, err := b.Fake.Synthesize(ctx, req); err == nil {
			as.Close()
			return nil, engine.Errorf(engine.KindBusy, "busy")
		}
	}
	return b.Fake.Synthesize(ctx, req)
}

func (b *broken) Stop(ctx context.Context, req engine.StopRequest) (engine.StopResult, error) {
	if b.how == "stop-leaves-process" {
		return engine.StopResult{WasRunning: true}, nil
	}
	return b.Fake.Stop(ctx, req)
}

// started returns a suite over a broken fake that has passed Describe and
// Start, and stops the fake when the test ends.
func started(t *testing.T, how string) *suite {
	f := NewFake()
	s := &suite{cfg: fakeConfig(&broken{Fake: f, how: how}).withDefaults(), goneWait: 300 * time.Millisecond}
	t.Cleanup(func() { f.Stop(context.Background(), engine.StopRequest{}) })
	for _, fn := range []func(tb){s.describe, s.start, s.health} {
		if r := step(fn); len(r.failures) > 0 && how != "api" {
			t.Fatalf("setup: %v", r.failures)
		}
	}
	return s
}

func TestSuiteCatchesBrokenEngines(t *testing.T) {
	tests := []struct {
		how  string
		step func(*suite) func(tb)
		want string
	}{
		{"api", func(s *suite) func(tb) { return s.describe }, "API version"},
		{"stream-differs", func(s *suite) func(tb) { return s.wholeEqualsStream }, "differ"},
		{"invalid-as-failed", func(s *suite) func(tb) { return s.invalidInput }, "unknown voice"},
		{"busy", func(s *suite) func(tb) { return s.cancelThenNext }, "busy"},
		{"stop-leaves-process", func(s *suite) func(tb) { return s.stop }, "still running"},
	}
	for _, tt := range tests {
		t.Run(tt.how, func(t *testing.T) {
			s := started(t, tt.how)
			r := step(tt.step(s))
			if len(r.failures) == 0 || !strings.Contains(strings.Join(r.failures, "\n"), tt.want) {
				t.Fatalf("failures = %q, want one mentioning %q", r.failures, tt.want)
			}
		})
	}
}

func TestSuiteCatchesFailedStream(t *testing.T) {
	s := started(t, "")
	s.cfg.Engine.(*broken).FailAfterFirstChunk = true
	if r := step(s.wholeEqualsStream); len(r.failures) == 0 {
		t.Fatal("a stream failing after its first chunk passed")
	}
}

func TestCheckLifecycle(t *testing.T) {
	ev := func(ps ...engine.Phase) []engine.LifecycleEvent {
		var out []engine.LifecycleEvent
		for _, p := range ps {
			out = append(out, engine.LifecycleEvent{Phase: p, PID: 7, Progress: -1})
		}
		return out
	}
	good := ev(engine.PhasePreflight, engine.PhaseSpawned, engine.PhaseLoading, engine.PhaseReady)
	if r := step(func(t tb) { checkLifecycle(t, good) }); len(r.failures) != 0 {
		t.Fatalf("good lifecycle failed: %v", r.failures)
	}
	for name, bad := range map[string][]engine.LifecycleEvent{
		"no ready":   ev(engine.PhaseSpawned, engine.PhaseLoading),
		"backwards":  ev(engine.PhaseLoading, engine.PhaseSpawned, engine.PhaseReady),
		"no loading": ev(engine.PhaseSpawned, engine.PhaseReady),
		"none":       nil,
	} {
		if r := step(func(t tb) { checkLifecycle(t, bad) }); len(r.failures) == 0 {
			t.Errorf("%s: passed", name)
		}
	}
}
