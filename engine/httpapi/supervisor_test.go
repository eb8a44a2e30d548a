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
)

func TestEngineCrashAndRecovery(t *testing.T) {
	fake := enginetest.NewFake()
	fake.FrameDelay = 0
	var opens atomic.Int32
	open := func(context.Context) (engine.Engine, func(), error) {
		opens.Add(1)
		return fake, func() {}, nil
	}
	sup := NewSupervisor(open, engine.StartRequest{}, nil)
	sup.Backoff = 10 * time.Millisecond
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sup.Stop(context.Background())
	srv := New(Config{Engine: sup.Engine(), Caps: fake.Desc.Capabilities, Status: sup, Failures: sup})
	sup.OnRestart = srv.EngineRestarted
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	if r := post(t, ts.URL, `{"input":"before"}`); r.StatusCode != 200 {
		t.Fatalf("before the crash: %d", r.StatusCode)
	}
	fake.Crash()
	waitFor(t, func() bool { h, _ := fake.Health(context.Background()); return !h.Ready })
	r := post(t, ts.URL, `{"input":"during"}`)
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 503 || !strings.Contains(string(body), "engine") || len(body) > 2000 {
		t.Fatalf("request in flight at the crash: %d %s", r.StatusCode, body)
	}
	waitFor(t, func() bool { return sup.Status().Ready })
	if r := post(t, ts.URL, `{"input":"after"}`); r.StatusCode != 200 {
		t.Fatalf("after the restart: %d", r.StatusCode)
	}
	resp, _ := http.Get(ts.URL + "/ready")
	var st Status
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if !st.Ready || st.Restarts != 1 {
		t.Fatalf("ready after restart: %+v", st)
	}
	resp, _ = http.Get(ts.URL + "/metrics")
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), "drama_engine_restarts_total 1") {
		t.Fatalf("metrics: %s", m)
	}
}
