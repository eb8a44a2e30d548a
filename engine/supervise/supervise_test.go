package supervise

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
)

// within fails the test when done is not closed in 10 s: a guard against a
// hang, not a measure of speed.
func within(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// crashed starts a supervisor over fake, made to start only once, and
// crashes the fake: the next EngineFailed begins a restart that
// goes to open.
func crashed(t *testing.T, fake *enginetest.Fake, open func(ctx context.Context, n int32) (engine.Engine, func(), error)) *Supervisor {
	t.Helper()
	fake.StartsOnce = true
	var opens atomic.Int32
	sup := New(func(ctx context.Context) (engine.Engine, func(), error) {
		n := opens.Add(1)
		if n == 1 {
			return fake, func() {}, nil
		}
		return open(ctx, n)
	}, engine.StartRequest{}, nil)
	sup.Backoff = time.Millisecond
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = fake.Stop(context.Background(), engine.StopRequest{}) })
	fake.Crash()
	enginetest.WaitFor(t, func() bool { h, _ := fake.Health(context.Background()); return !h.Ready })
	return sup
}

func TestStopWhileRestartOpens(t *testing.T) {
	opening, release := make(chan struct{}), make(chan struct{})
	closed := make(chan struct{})
	sup := crashed(t, enginetest.NewFake(), func(context.Context, int32) (engine.Engine, func(), error) {
		close(opening)
		<-release
		return enginetest.NewFake(), func() { close(closed) }, nil
	})
	sup.EngineFailed(errors.New("crash"))
	<-opening
	stopped := make(chan struct{})
	go func() { sup.Stop(context.Background()); close(stopped) }()
	close(release)
	within(t, closed, "a plugin opened while the supervisor stopped was left running")
	within(t, stopped, "Stop did not return")
	if _, err := sup.Engine().Describe(context.Background()); !errors.Is(err, engine.ErrNotReady) {
		t.Fatalf("engine after stop: %v, want not ready", err)
	}
}

// TestStopCancelsARestartInProgress: the restart's open runs under the
// supervisor's context, which Stop cancels; Stop returns once the restart
// has ended, and no attempt follows.
func TestStopCancelsARestartInProgress(t *testing.T) {
	opening := make(chan struct{})
	var cancelled, attempts atomic.Int32
	sup := crashed(t, enginetest.NewFake(), func(ctx context.Context, n int32) (engine.Engine, func(), error) {
		attempts.Add(1)
		if n == 2 {
			close(opening)
		}
		<-ctx.Done() // an open that would hang until told to give up
		cancelled.Add(1)
		return nil, nil, ctx.Err()
	})
	sup.EngineFailed(errors.New("crash"))
	<-opening
	stopped := make(chan struct{})
	go func() { sup.Stop(context.Background()); close(stopped) }()
	within(t, stopped, "Stop did not cancel the restart in progress")
	if n := cancelled.Load(); n != 1 {
		t.Fatalf("the open in progress saw %d cancellations, want 1", n)
	}
	if n := attempts.Load(); n != 1 {
		t.Fatalf("%d open attempts, want 1: an attempt followed Stop", n)
	}
	if st := sup.Status(); st.Phase != "stopped" {
		t.Fatalf("status after Stop: %+v", st)
	}
}

// TestStopEndsTheWaitBetweenAttempts: with an hour between attempts, Stop
// returns as soon as it is called, and the attempt the wait was for never
// runs.
func TestStopEndsTheWaitBetweenAttempts(t *testing.T) {
	var attempts atomic.Int32
	sup := crashed(t, enginetest.NewFake(), func(context.Context, int32) (engine.Engine, func(), error) {
		attempts.Add(1)
		return nil, nil, errors.New("the plugin would not start")
	})
	sup.Backoff, sup.MaxBackoff = time.Hour, time.Hour
	sup.EngineFailed(errors.New("crash"))
	enginetest.WaitFor(t, func() bool { return strings.Contains(sup.Status().Message, "attempt 1 failed") })
	stopped := make(chan struct{})
	go func() { sup.Stop(context.Background()); close(stopped) }()
	within(t, stopped, "Stop waited for the hour between attempts")
	if n := attempts.Load(); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
}

// failOnce fails one call of Synthesize in the engine's words, as a
// request the engine could not serve does, while the engine stays up.
type failOnce struct{ engine.Engine }

func (failOnce) Synthesize(context.Context, engine.SynthesisRequest) (engine.AudioStream, error) {
	return nil, engine.Errorf(engine.KindFailed, "synthesize: native server answered 500: injected failure")
}

// TestAFailedCallOfALiveEngineRestartsNothing: a synthesis that fails
// while the engine still answers its health check as ready changes
// nothing: the status stays ready, no restart runs, and a catalog restart
// asked for next goes ahead.
func TestAFailedCallOfALiveEngineRestartsNothing(t *testing.T) {
	fake := enginetest.NewFake()
	var opens, starts atomic.Int32
	eng := &countStarts{Engine: failOnce{fake}, n: &starts}
	sup := New(func(context.Context) (engine.Engine, func(), error) { opens.Add(1); return eng, func() {}, nil }, engine.StartRequest{}, nil)
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sup.Stop(context.Background())
	_, err := sup.Engine().Synthesize(context.Background(), engine.SynthesisRequest{Input: "x"})
	if err == nil {
		t.Fatal("want the injected failure")
	}
	sup.EngineFailed(err)
	if st := sup.Status(); !st.Ready || st.Phase != "ready" || st.Message != "" {
		t.Fatalf("status after a failed call of a live engine: %+v, want ready", st)
	}
	_, _ = fake.Stop(context.Background(), engine.StopRequest{}) // Restart starts it again
	if err := sup.Restart(context.Background()); err != nil {
		t.Fatalf("a restart after a failed call of a live engine: %v", err)
	}
	if o, s := opens.Load(), starts.Load(); o != 1 || s != 2 {
		t.Fatalf("%d opens and %d starts, want 1 open and 2 starts (the start and the asked-for restart)", o, s)
	}
}

type countStarts struct {
	engine.Engine
	n *atomic.Int32
}

func (c *countStarts) Start(ctx context.Context, req engine.StartRequest, ev func(engine.LifecycleEvent)) error {
	c.n.Add(1)
	return c.Engine.Start(ctx, req, ev)
}

// TestStatusTellsNoOutputNorPaths: a start that fails with the engine's
// output and local paths reports a short cause in Status; the error
// returned has the detail.
func TestStatusTellsNoOutputNorPaths(t *testing.T) {
	dir := t.TempDir()
	cause := &engine.Error{Kind: engine.KindFailed, Op: "start",
		Msg:     "native: engine exited with code 1; its last output:\n  Traceback (most recent call last):\n  File \"" + dir + "/model.py\", line 3\n  secret-tail-line",
		LogTail: "secret-tail-line " + dir}
	fake := enginetest.NewFake()
	sup := New(func(context.Context) (engine.Engine, func(), error) { return &startFails{fake, cause}, func() {}, nil }, engine.StartRequest{}, nil)
	err := sup.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "secret-tail-line") {
		t.Fatalf("want the start to fail with the detail, got %v", err)
	}
	st := sup.Status()
	if st.Phase != "failed" || !strings.Contains(st.Message, "exited with code 1") || !strings.Contains(st.Message, "see the engine log") {
		t.Fatalf("status %+v, want failed with the exit and a pointer to the log", st)
	}
	for _, bad := range []string{"secret-tail-line", dir, "Traceback", "\n"} {
		if strings.Contains(st.Message, bad) {
			t.Fatalf("status message %q holds %q", st.Message, bad)
		}
	}
}

type startFails struct {
	engine.Engine
	err error
}

func (s *startFails) Start(context.Context, engine.StartRequest, func(engine.LifecycleEvent)) error {
	return s.err
}

func TestBrief(t *testing.T) {
	for in, want := range map[string]string{
		"started /opt/drama/engine/tensorfold-native (pid 12); its output goes to /home/u/.local/share/drama/.drama/run/engine-cuda.log": "started tensorfold-native (pid 12); its output goes to engine-cuda.log",
		"native: engine exited with code 1; its last output:\n  boom":                                                                    "native: engine exited with code 1",
		"loading 40%": "loading 40%",
		"":            "",
	} {
		if got := Brief(in); got != want {
			t.Errorf("Brief(%q) = %q, want %q", in, got, want)
		}
	}
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestRestartFailureIsLoggedInFull: what Status leaves out of a failed
// restart (the engine's output, its paths) is in the log.
func TestRestartFailureIsLoggedInFull(t *testing.T) {
	dir := t.TempDir()
	cause := &engine.Error{Kind: engine.KindFailed, Op: "start", Msg: "native: engine exited with code 1", LogTail: "secret-tail-line " + dir}
	sup := crashed(t, enginetest.NewFake(), func(context.Context, int32) (engine.Engine, func(), error) { return nil, nil, cause })
	var log enginetest.Buffer
	sup.Logger = newTextLogger(&log)
	sup.Backoff, sup.MaxBackoff = time.Hour, time.Hour
	sup.EngineFailed(errors.New("crash"))
	enginetest.WaitFor(t, func() bool { return strings.Contains(sup.Status().Message, "attempt 1 failed") })
	msg := sup.Status().Message
	sup.Stop(context.Background())
	if st := log.String(); !strings.Contains(st, "secret-tail-line") || !strings.Contains(st, dir) {
		t.Fatalf("the log lacks the engine's output: %s", st)
	}
	if strings.Contains(msg, "secret-tail-line") || strings.Contains(msg, dir) || !strings.Contains(msg, "see the engine log") {
		t.Fatalf("status %q", msg)
	}
}

// TestRestartRefusalsSayWhy: a restart asked for while one after a failure
// runs, or once the supervisor stops, is refused not ready in words that
// say which.
func TestRestartRefusalsSayWhy(t *testing.T) {
	opening := make(chan struct{})
	sup := crashed(t, enginetest.NewFake(), func(ctx context.Context, n int32) (engine.Engine, func(), error) {
		if n == 2 {
			close(opening)
		}
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	sup.EngineFailed(errors.New("crash"))
	<-opening
	if err := sup.Restart(context.Background()); !errors.Is(err, engine.ErrNotReady) || !strings.Contains(err.Error(), "after a failure") {
		t.Fatalf("restart during a restart after a failure: %v", err)
	}
	sup.Stop(context.Background())
	if err := sup.Restart(context.Background()); !errors.Is(err, engine.ErrNotReady) || !strings.Contains(err.Error(), "stopping") {
		t.Fatalf("restart after Stop: %v", err)
	}
}
