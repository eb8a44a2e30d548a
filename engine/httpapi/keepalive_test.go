package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/supervise"
)

// supStatus is a Supervisor's status as a StatusSource, naming its one
// engine as drama serve does.
type supStatus struct{ sup *supervise.Supervisor }

func (s supStatus) Status() Status { return Status(s.sup.Status()) }

func (s supStatus) Engines() []EngineStatus {
	return []EngineStatus{{Name: "fake", Status: s.Status()}}
}

// TestReadyAndSpeechWhileUnloaded: an engine unloaded for idleness is
// ready in GET /ready (200, phase unloaded, loaded false, a message that
// says the next request loads it, and the same in its "engines" entry);
// GET /health stays 200; a speech request is served, loading it first.
func TestReadyAndSpeechWhileUnloaded(t *testing.T) {
	fake := enginetest.NewFake()
	fake.FrameDelay = 0
	var starts atomic.Int32
	sup := supervise.New(func(context.Context) (engine.Engine, func(), error) { return fake, func() {}, nil },
		engine.StartRequest{}, func(ev engine.LifecycleEvent) {
			if ev.Phase == engine.PhasePreflight {
				starts.Add(1)
			}
		})
	sup.KeepAlive = 5 * time.Millisecond
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Stop(context.Background()) })
	srv := New(Config{Engine: sup.Engine(), Caps: fake.Desc.Capabilities, Status: supStatus{sup}, Failures: sup, Use: sup})
	ts := httptestServer(t, srv)
	waitFor(t, func() bool { return sup.State() == supervise.StateUnloaded })

	resp, err := http.Get(ts + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Status
		Engines []EngineStatus `json:"engines"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || body.Phase != "unloaded" || !body.Ready || body.Loaded ||
		!strings.Contains(body.Message, "loads on the next request") {
		t.Fatalf("GET /ready while unloaded: %d %+v %v", resp.StatusCode, body, err)
	}
	if len(body.Engines) != 1 || body.Engines[0].Name != "fake" || body.Engines[0].Phase != "unloaded" || body.Engines[0].Loaded {
		t.Fatalf("engines of GET /ready: %+v", body.Engines)
	}
	if resp, err := http.Get(ts + "/health"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /health while unloaded: %v %v", resp, err)
	}
	r := post(t, ts, `{"input":"wake up","stream":false}`)
	audio, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || len(audio) <= 44 {
		t.Fatalf("speech while unloaded: %d, %d bytes", r.StatusCode, len(audio))
	}
	if n := starts.Load(); n != 2 {
		t.Fatalf("%d starts, want 2 (the first and the load for the request)", n)
	}
}

func httptestServer(t *testing.T, srv *Server) string {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// holds is a UseTracker that counts the holds open.
type holds struct{ open atomic.Int32 }

func (h *holds) InUse() func() {
	h.open.Add(1)
	var once sync.Once
	return func() { once.Do(func() { h.open.Add(-1) }) }
}

// gated blocks each synthesis until its gate opens.
type gated struct {
	engine.Engine
	gate chan struct{}
	in   atomic.Int32
}

func (g *gated) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	g.in.Add(1)
	<-g.gate
	return g.Engine.Synthesize(ctx, req)
}

// TestAQueuedRequestHoldsTheEngine: a request waiting for its turn holds
// the engine in use (so an idle unload cannot fall between it and the
// request before it), and every hold ends with its request.
func TestAQueuedRequestHoldsTheEngine(t *testing.T) {
	h := &holds{}
	g := &gated{gate: make(chan struct{})}
	ts, _, _, _ := startFake(t, func(f *enginetest.Fake, c *Config) {
		g.Engine = c.Engine
		c.Engine, c.Use = g, h
	})
	var opened sync.Once
	open := func() { opened.Do(func() { close(g.gate) }) }
	t.Cleanup(open) // before the server closes: a failed test leaves no handler blocked
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(ts.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"queued","stream":false}`))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	waitFor(t, func() bool { return g.in.Load() == 1 && h.open.Load() == 2 })
	open()
	wg.Wait()
	if codes[0] != http.StatusOK || codes[1] != http.StatusOK {
		t.Fatalf("codes %v", codes)
	}
	// a handler returns just after its client has the last byte
	waitFor(t, func() bool { return h.open.Load() == 0 })
}
