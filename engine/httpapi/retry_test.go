package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
)

// busyEngine answers every synthesis busy, as an engine does once its own
// busy retry has run out.
type busyEngine struct {
	engine.Engine
	calls atomic.Int32
}

func (b *busyEngine) Synthesize(context.Context, engine.SynthesisRequest) (engine.AudioStream, error) {
	b.calls.Add(1)
	return nil, engine.Busyf("synthesize: still busy after 10s")
}

// TestBusyIsRetriedInOneLoop: the engine retries its busy window itself
// (engine.Engine's contract); the API does not retry it again around that,
// so a client waits the engine's 10 s, not twice that.
func TestBusyIsRetriedInOneLoop(t *testing.T) {
	fake := enginetest.NewFake()
	be := &busyEngine{Engine: fake}
	ts, _ := startBound(t, func(c *Config) { c.Engine = be })
	addr := ts.Listener.Addr().String()
	r := rawSend(t, addr, "POST /v1/audio/speech HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json", []byte(`{"input":"hello"}`))
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(r.Body, "engine_busy") {
		t.Fatalf("%d %v %s, want 503 engine_busy with Retry-After", r.Status, r.Header, r.Body)
	}
	if n := be.calls.Load(); n != 1 {
		t.Fatalf("the engine was asked %d times: its own busy retry was wrapped in another loop", n)
	}
}

// TestNoQueue: MaxQueue < 0 (drama serve --max-queue 0) lets no request
// wait: while one synthesis runs, the next gets 503 queue_full at once.
func TestNoQueue(t *testing.T) {
	ts, _, ce, _ := startFake(t, func(f *enginetest.Fake, c *Config) {
		c.MaxQueue = -1
		f.FrameDelay = 20 * time.Millisecond
	})
	addr := strings.TrimPrefix(ts.URL, "http://")
	done := make(chan rawResponse)
	go func() { done <- rawPost(t, ts.URL, `{"input":"`+strings.Repeat("long text ", 30)+`","stream":true}`) }()
	waitFor(t, func() bool { return ce.active.Load() == 1 })
	r := rawSend(t, addr, "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json", []byte(`{"input":"second"}`))
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(r.Body, "queue_full") || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second request with no queue: %d %s", r.Status, r.Body)
	}
	if first := <-done; first.Status != 200 || !first.Terminated {
		t.Fatalf("first request: %d, terminated %v", first.Status, first.Terminated)
	}
}

// flakyOpener fails to open the engine a number of times, then opens it.
type flakyOpener struct {
	fake  *enginetest.Fake
	fails atomic.Int32
}

func (o *flakyOpener) open(context.Context) (engine.Engine, func(), error) {
	if o.fails.Add(-1) >= 0 {
		return nil, nil, errors.New("the plugin would not start")
	}
	return o.fake, func() {}, nil
}

// crashOnce is an engine whose Start fails after its first, so that a
// restart must open a new plugin.
type crashOnce struct {
	engine.Engine
	starts atomic.Int32
}

func (c *crashOnce) Start(ctx context.Context, req engine.StartRequest, ev func(engine.LifecycleEvent)) error {
	if c.starts.Add(1) > 1 {
		return engine.Errorf(engine.KindFailed, "gone")
	}
	return c.Engine.Start(ctx, req, ev)
}

// TestRestartsGoOnAndHealthTellsTheTruth: past MaxRestarts failed
// restarts the supervisor reports failed (GET /health and /ready 503) and
// keeps trying; when an attempt succeeds, both are 200 again.
func TestRestartsGoOnAndHealthTellsTheTruth(t *testing.T) {
	first := enginetest.NewFake()
	first.FrameDelay = 0
	second := enginetest.NewFake()
	second.FrameDelay = 0
	op := &flakyOpener{fake: second}
	opens := atomic.Int32{}
	open := func(ctx context.Context) (engine.Engine, func(), error) {
		if opens.Add(1) == 1 {
			return &crashOnce{Engine: first}, func() {}, nil
		}
		return op.open(ctx)
	}
	sup := NewSupervisor(open, engine.StartRequest{}, nil)
	sup.Backoff, sup.MaxBackoff, sup.MaxRestarts = time.Millisecond, 5*time.Millisecond, 3
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sup.Stop(context.Background())
	srv := New(Config{Engine: sup.Engine(), Caps: first.Desc.Capabilities, Status: sup, Failures: sup})
	ts := newServer(t, srv)

	op.fails.Store(1 << 20) // fails until told otherwise
	first.Crash()
	waitFor(t, func() bool { h, _ := first.Health(context.Background()); return !h.Ready })
	sup.EngineFailed(errors.New("crash"))
	waitFor(t, func() bool { return sup.Status().Phase == "failed" })
	for _, path := range []string{"/health", "/ready"} {
		if code, body := status(t, ts+path); code != http.StatusServiceUnavailable || !strings.Contains(body, "failed") {
			t.Fatalf("%s while the engine cannot start: %d %s, want 503 saying failed", path, code, body)
		}
	}
	defer second.Stop(context.Background(), engine.StopRequest{})
	op.fails.Store(0) // the plugin starts again
	waitFor(t, func() bool { return sup.Status().Ready })
	for _, path := range []string{"/health", "/ready"} {
		if code, body := status(t, ts+path); code != http.StatusOK {
			t.Fatalf("%s after the engine came back: %d %s", path, code, body)
		}
	}
}

func newServer(t *testing.T, srv *Server) string {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

func status(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
