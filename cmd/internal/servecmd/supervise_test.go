package servecmd

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/serve"
	"github.com/drama-tts/drama/engine/supervise"
)

func TestEngineCrashAndRecovery(t *testing.T) {
	fake, sup := supervisedFake(0)
	sup.Backoff = 10 * time.Millisecond
	url := apiOver(t, sup, fake.Desc.Capabilities)

	if code, _ := speech(t, url, `{"input":"before"}`); code != 200 {
		t.Fatalf("before the crash: %d", code)
	}
	fake.Crash()
	enginetest.WaitFor(t, func() bool { h, _ := fake.Health(context.Background()); return !h.Ready })
	code, body := speech(t, url, `{"input":"during"}`)
	if code != 503 || !strings.Contains(body, "engine") || len(body) > 2000 {
		t.Fatalf("request in flight at the crash: %d %s", code, body)
	}
	enginetest.WaitFor(t, func() bool { return sup.Status().Ready })
	if code, _ := speech(t, url, `{"input":"after"}`); code != 200 {
		t.Fatalf("after the restart: %d", code)
	}
	_, ready := get(t, url+"/ready")
	var st supervise.Status
	if err := json.Unmarshal([]byte(ready), &st); err != nil || !st.Ready || st.Restarts != 1 {
		t.Fatalf("ready after restart: %v %s", err, ready)
	}
	if _, m := get(t, url+"/metrics"); !strings.Contains(m, "drama_engine_restarts_total 1") {
		t.Fatalf("metrics: %s", m)
	}
}

// flakyOpener fails to open the engine a number of times, then opens it.
type flakyOpener struct {
	fake  *enginetest.Fake
	fails atomic.Int32
	err   error
}

func (o *flakyOpener) open(context.Context) (engine.Engine, func(), error) {
	if o.fails.Add(-1) >= 0 {
		if o.err != nil {
			return nil, nil, o.err
		}
		return nil, nil, errors.New("the plugin would not start")
	}
	return o.fake, func() {}, nil
}

// restartsFailing starts an engine that crashes, and whose restarts fail
// with openErr (nil: a plain error) until op.fails is set to 0.
func restartsFailing(t *testing.T, openErr error) (*supervise.Supervisor, *flakyOpener, string) {
	first := enginetest.NewFake()
	first.FrameDelay, first.StartsOnce = 0, true
	second := enginetest.NewFake()
	second.FrameDelay = 0
	t.Cleanup(func() { second.Stop(context.Background(), engine.StopRequest{}) })
	op := &flakyOpener{fake: second, err: openErr}
	opens := atomic.Int32{}
	open := func(ctx context.Context) (engine.Engine, func(), error) {
		if opens.Add(1) == 1 {
			return first, func() {}, nil
		}
		return op.open(ctx)
	}
	sup := supervise.New(open, engine.StartRequest{}, nil)
	sup.Backoff, sup.MaxBackoff, sup.MaxRestarts = time.Millisecond, 5*time.Millisecond, 3
	url := apiOver(t, sup, first.Desc.Capabilities)
	op.fails.Store(1 << 20) // fails until told otherwise
	first.Crash()
	enginetest.WaitFor(t, func() bool { h, _ := first.Health(context.Background()); return !h.Ready })
	sup.EngineFailed(errors.New("crash"))
	enginetest.WaitFor(t, func() bool { return sup.Status().Phase == "failed" })
	return sup, op, url
}

// TestRestartsGoOnAndHealthTellsTheTruth: past MaxRestarts failed
// restarts the supervisor reports failed (GET /health and /ready 503) and
// keeps trying; when an attempt succeeds, both are 200 again.
func TestRestartsGoOnAndHealthTellsTheTruth(t *testing.T) {
	sup, op, url := restartsFailing(t, nil)
	for _, path := range []string{"/health", "/ready"} {
		if code, body := get(t, url+path); code != http.StatusServiceUnavailable || !strings.Contains(body, "failed") {
			t.Fatalf("%s while the engine cannot start: %d %s, want 503 saying failed", path, code, body)
		}
	}
	op.fails.Store(0) // the plugin starts again
	enginetest.WaitFor(t, func() bool { return sup.Status().Ready })
	for _, path := range []string{"/health", "/ready"} {
		if code, body := get(t, url+path); code != http.StatusOK {
			t.Fatalf("%s after the engine came back: %d %s", path, code, body)
		}
	}
}

// TestReadyAndHealthTellNoOutputNorPaths: an engine that crashed and
// exits again at each restart, its output holding a Python traceback with
// a temporary path, is reported on GET /ready and GET /health with the
// phase and a short cause; its output and the path stay out.
func TestReadyAndHealthTellNoOutputNorPaths(t *testing.T) {
	dir := t.TempDir()
	tail := "Traceback (most recent call last):\n  File \"" + filepath.Join(dir, "model.py") + "\", line 3\nRuntimeError: CUDA out of memory secret-tail-line"
	exit := &native.ExitError{Code: 1, Tail: tail}
	cause := &engine.Error{Kind: engine.KindFailed, Op: "start", Msg: exit.Error(), LogTail: tail, Err: exit}
	_, _, url := restartsFailing(t, cause)
	for _, path := range []string{"/health", "/ready"} {
		code, body := get(t, url+path)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "failed") || !strings.Contains(body, "exited with code 1") {
			t.Fatalf("%s: %d %s, want 503 with the phase and the exit", path, code, body)
		}
		for _, bad := range []string{"secret-tail-line", dir, "Traceback", `\n`} {
			if strings.Contains(body, bad) {
				t.Fatalf("%s tells %q: %s", path, bad, body)
			}
		}
	}
}

// failingInput fails a synthesis whose input holds [fail] as the engine
// does for a request it cannot serve (a 500 of the native server), and
// stays up.
type failingInput struct{ engine.Engine }

func (f failingInput) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	if strings.Contains(req.Input, "[fail]") {
		return nil, engine.Errorf(engine.KindFailed, "synthesize: native server answered 500")
	}
	return f.Engine.Synthesize(ctx, req)
}

// TestAFailedSynthesisOfALiveEngineIsNoRestart: after a synthesis fails
// while the engine stays up, the engine is still ready, the next request is
// served, and no restart is counted.
func TestAFailedSynthesisOfALiveEngineIsNoRestart(t *testing.T) {
	fake := enginetest.NewFake()
	fake.FrameDelay = 0
	var opens atomic.Int32
	sup := supervise.New(func(context.Context) (engine.Engine, func(), error) {
		opens.Add(1)
		return failingInput{fake}, func() {}, nil
	}, engine.StartRequest{}, nil)
	url := apiOver(t, sup, fake.Desc.Capabilities)
	if code, body := speech(t, url, `{"input":"[fail] this one","stream":false}`); code != 500 || !strings.Contains(body, "engine_failed") {
		t.Fatalf("the failing request: %d %s", code, body)
	}
	if code, body := get(t, url+"/ready"); code != 200 || !strings.Contains(body, `"restarts":0`) {
		t.Fatalf("/ready after a failed synthesis of a live engine: %d %s", code, body)
	}
	if code, body := speech(t, url, `{"input":"the next one","stream":false}`); code != 200 {
		t.Fatalf("the next request: %d %s", code, body)
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("the plugin was opened %d times, want once", n)
	}
}

// TestRestartFiguresAgreeAcrossEngines: two engines under drama serve's
// supervisors and HTTP API, one restarted once and the other twice:
// drama_engine_restarts_total is the sum of each engine's
// drama_engine_restarts, and of /ready's per_engine restarts.
func TestRestartFiguresAgreeAcrossEngines(t *testing.T) {
	var fakes []*enginetest.Fake
	var sups []*supervise.Supervisor
	for range 2 {
		fake, sup := supervisedFake(0)
		sup.Backoff = 10 * time.Millisecond
		fakes, sups = append(fakes, fake), append(sups, sup)
	}
	opts := serveOptions(t, "", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, opts, discardLogs(), t.TempDir(), engine.Install{},
		[]serve.Engine{{Name: "gpu0-0", Sup: sups[0]}, {Name: "gpu1-0", Sup: sups[1]}}, ln.Addr().String())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.Pool.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	s.Pool.Watch(ctx, 5*time.Millisecond)
	go s.Serve(ln)
	t.Cleanup(func() { s.HTTP.Close() })
	url := "http://" + ln.Addr().String()

	for i, times := range []int{1, 2} {
		for n := 1; n <= times; n++ {
			fakes[i].Crash()
			enginetest.WaitFor(t, func() bool { st := sups[i].Status(); return st.Ready && st.Restarts == n })
		}
	}
	_, m := get(t, url+"/metrics")
	for _, want := range []string{`drama_engine_restarts{engine="gpu0-0"} 1`, `drama_engine_restarts{engine="gpu1-0"} 2`, "\ndrama_engine_restarts_total 3\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, m)
		}
	}
	_, ready := get(t, url+"/ready")
	var st httpapi.Readiness
	if err := json.Unmarshal([]byte(ready), &st); err != nil || len(st.PerEngine) != 2 || st.PerEngine[0].Restarts != 1 ||
		st.PerEngine[1].Restarts != 2 || st.Restarts != 3 {
		t.Fatalf("/ready restarts: %v %s; want 1 and 2, 3 in all", err, ready)
	}
}
