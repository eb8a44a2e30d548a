package httpapi

import (
	"context"
	"encoding/json"
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

// failingRestart is an engine that starts once; every later Start fails, so
// a restart must open a new plugin.
type failingRestart struct {
	engine.Engine
	starts atomic.Int32
}

func (f *failingRestart) Start(ctx context.Context, req engine.StartRequest, ev func(engine.LifecycleEvent)) error {
	if f.starts.Add(1) > 1 {
		return engine.Errorf(engine.KindFailed, "the plugin is gone")
	}
	return f.Engine.Start(ctx, req, ev)
}

func TestStopWhileRestartOpens(t *testing.T) {
	fake := enginetest.NewFake()
	first := &failingRestart{Engine: fake}
	opening, release := make(chan struct{}), make(chan struct{})
	var opens atomic.Int32
	closed := make(chan struct{})
	open := func(context.Context) (engine.Engine, func(), error) {
		if opens.Add(1) == 1 {
			return first, func() {}, nil
		}
		close(opening)
		<-release
		return enginetest.NewFake(), func() { close(closed) }, nil
	}
	sup := NewSupervisor(open, engine.StartRequest{}, nil)
	sup.Backoff = time.Millisecond
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.Crash()
	waitFor(t, func() bool { h, _ := fake.Health(context.Background()); return !h.Ready })
	sup.EngineFailed(errors.New("crash"))
	<-opening
	sup.Stop(context.Background())
	close(release)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("a plugin opened while the supervisor stopped was left running")
	}
	if _, err := sup.Engine().Health(context.Background()); !engine.IsNotReady(err) {
		t.Fatalf("engine after stop: %v, want not ready", err)
	}
}
