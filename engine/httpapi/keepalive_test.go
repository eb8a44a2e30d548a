package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/pool/pooltest"
	"github.com/drama-tts/drama/engine/supervise"
)

// TestReadyAndSpeechWhileUnloaded: behind a pool of one supervisor with a
// keep-alive, as drama serve runs it, an engine unloaded for idleness is
// ready in GET /ready (200, phase unloaded, loaded false, a message that
// says the next request loads it, and counted ready); GET /health stays
// 200; a speech request is served, loading it first.
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
	srv := New(pooltest.New(t, pool.Options{MaxQueue: 4}, sup), Config{Caps: fake.Desc.Capabilities})
	ts := httptestServer(t, srv)
	enginetest.WaitFor(t, func() bool { return sup.Status().Phase == "unloaded" })

	resp, err := http.Get(ts + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	var body Readiness
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || body.Phase != "unloaded" || !body.Ready || body.Loaded ||
		!strings.Contains(body.Message, "loads on the next request") || body.Engines != 1 || body.EnginesReady != 1 {
		t.Fatalf("GET /ready while unloaded: %d %+v %v", resp.StatusCode, body, err)
	}
	if len(body.PerEngine) != 1 || body.PerEngine[0].Name != "gpu0-0" || body.PerEngine[0].Phase != "unloaded" || body.PerEngine[0].Loaded {
		t.Fatalf("per_engine of GET /ready, one engine: %+v", body.PerEngine)
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
	enginetest.WaitFor(t, func() bool { return sup.Status().Phase == "unloaded" })
}

func httptestServer(t *testing.T, srv *Server) string {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}
