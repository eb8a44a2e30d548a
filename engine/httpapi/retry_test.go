package httpapi

import (
	"context"
	"net/http"
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
	return nil, engine.Errorf(engine.KindBusy, "synthesize: still busy after 10s")
}

// TestBusyIsRetriedInOneLoop: the engine retries its busy window itself
// (engine.Engine's contract); the API does not retry it again around that,
// so a client waits the engine's 10 s, not twice that.
func TestBusyIsRetriedInOneLoop(t *testing.T) {
	fake := enginetest.NewFake()
	be := &busyEngine{Engine: fake}
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Engine = be })
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
	ts, _, ce, _ := startFake(t, func(f *enginetest.Fake, c *served) {
		c.MaxQueue = -1
		f.FrameDelay = 20 * time.Millisecond
	})
	addr := strings.TrimPrefix(ts.URL, "http://")
	done := make(chan rawExchange)
	go func() { done <- rawPost(t, ts.URL, `{"input":"`+strings.Repeat("long text ", 30)+`","stream":true}`) }()
	enginetest.WaitFor(t, func() bool { return ce.active.Load() == 1 })
	r := rawSend(t, addr, "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json", []byte(`{"input":"second"}`))
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(r.Body, "queue_full") || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second request with no queue: %d %s", r.Status, r.Body)
	}
	if first := <-done; first.Status != 200 || !first.Terminated {
		t.Fatalf("first request: %d, terminated %v", first.Status, first.Terminated)
	}
}
