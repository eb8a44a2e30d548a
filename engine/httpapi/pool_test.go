package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/pool/pooltest"
	"github.com/drama-tts/drama/engine/supervise"
)

// poolMember is one fake engine of a pool, recording the voices it spoke;
// a failure reported to it has it restarting, as a supervisor would.
type poolMember struct {
	*pooltest.Member
	eng *recordingEngine
}

type recordingEngine struct {
	engine.Engine
	mu     sync.Mutex
	voices []string
}

func (r *recordingEngine) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	r.mu.Lock()
	r.voices = append(r.voices, req.Voice)
	r.mu.Unlock()
	return r.Engine.Synthesize(ctx, req)
}

func (r *recordingEngine) spoke() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.voices...)
}

// startPool starts an API server in front of a pool of n fake engines;
// tune, if given, changes the server's Config first.
func startPool(t *testing.T, n int, tune ...func(*Config)) (*httptest.Server, []poolMember, *pool.Pool) {
	t.Helper()
	var engines []pool.Member
	var members []poolMember
	for range n {
		fake := enginetest.NewFake()
		fake.FrameDelay = 0
		if err := fake.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fake.Stop(context.Background(), engine.StopRequest{}) })
		eng := &recordingEngine{Engine: fake}
		m := poolMember{Member: pooltest.NewMember(eng), eng: eng}
		m.OnFailure = func(error) {
			m.Set(supervise.Status{Phase: supervise.PhaseRestarting, Message: "the engine failed: restarting it"})
		}
		members = append(members, m)
		engines = append(engines, m.Member)
	}
	p := pooltest.New(t, pool.Options{MaxQueue: 8}, engines...)
	cfg := Config{Caps: enginetest.NewFake().Desc.Capabilities, Model: "drama-3-test"}
	for _, f := range tune {
		f(&cfg)
	}
	srv := New(p, cfg)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts, members, p
}

func speak(t *testing.T, url, voice string) int {
	t.Helper()
	body := `{"input":"hello","stream":false}`
	if voice != "" {
		body = `{"input":"hello","voice":"` + voice + `","stream":false}`
	}
	r := post(t, url, body)
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return r.StatusCode
}

// TestPoolVoiceAffinity: each voice keeps to the engine that spoke it.
func TestPoolVoiceAffinity(t *testing.T) {
	ts, ms, _ := startPool(t, 2)
	for _, v := range []string{"narrator", "alice", "narrator", "alice", "alice", "narrator"} {
		if code := speak(t, ts.URL, v); code != 200 {
			t.Fatalf("voice %s: %d", v, code)
		}
	}
	a, b := ms[0].eng.spoke(), ms[1].eng.spoke()
	if strings.Join(a, ",") != "narrator,narrator,narrator" || strings.Join(b, ",") != "alice,alice,alice" {
		t.Fatalf("engine 0 spoke %v, engine 1 %v: want each voice on one engine", a, b)
	}
}

// TestPoolFailureGoesToItsEngine: a synthesis that finds its engine dead
// reports the failure to that engine alone; the next request is served by
// the other engine.
func TestPoolFailureGoesToItsEngine(t *testing.T) {
	ts, ms, _ := startPool(t, 2)
	fake := ms[0].eng.Engine.(*enginetest.Fake)
	fake.Crash()
	enginetest.WaitFor(t, func() bool { h, _ := fake.Health(context.Background()); return !h.Ready })
	if code := speak(t, ts.URL, ""); code != http.StatusServiceUnavailable && code != http.StatusInternalServerError {
		t.Fatalf("synthesis on a crashed engine: %d", code)
	}
	if ms[0].Failures() != 1 || ms[1].Failures() != 0 {
		t.Fatalf("failures %d and %d, want 1 and 0", ms[0].Failures(), ms[1].Failures())
	}
	if code := speak(t, ts.URL, ""); code != 200 {
		t.Fatalf("after one engine failed: %d, want the other to serve", code)
	}
	if got := ms[1].eng.spoke(); len(got) != 1 {
		t.Fatalf("engine 1 spoke %v", got)
	}
}

// TestPoolReadyAndMetrics: /ready counts the ready engines and lists each;
// /metrics has the per-engine series beside the existing ones.
func TestPoolReadyAndMetrics(t *testing.T) {
	ts, ms, _ := startPool(t, 2)
	ms[1].Set(supervise.Status{Phase: "restarting"})
	var body Readiness
	r, err := http.Get(ts.URL + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(r.Body).Decode(&body)
	r.Body.Close()
	if r.StatusCode != 200 || !body.Ready || body.Engines != 2 || body.EnginesReady != 1 || len(body.PerEngine) != 2 ||
		body.PerEngine[1].Name != "gpu1-0" || body.PerEngine[1].Phase != "restarting" {
		t.Fatalf("/ready %d %+v", r.StatusCode, body)
	}
	ms[0].Set(supervise.Status{Phase: "restarting"})
	if r, _ := http.Get(ts.URL + "/ready"); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/ready with no engine ready: %d", r.StatusCode)
	}
	ms[0].Set(supervise.Status{Phase: "ready", Ready: true})
	speak(t, ts.URL, "narrator")
	r, err = http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	for _, want := range []string{`drama_engine_ready{engine="gpu0-0"} 1`, `drama_engine_ready{engine="gpu1-0"} 0`,
		`drama_engine_requests_total{engine="gpu0-0"} 1`, `drama_engine_requests_total{engine="gpu1-0"} 0`,
		"drama_queue_depth 0", `drama_requests_total{status="200"} 1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestReadyAfterDrain: once the server drains, GET /ready answers 503 in
// phase stopping while GET /health stays 200, and a request that finds an
// engine free is still served.
func TestReadyAfterDrain(t *testing.T) {
	ts, _, _, srv := startFake(t, nil)
	srv.Drain()
	r, err := http.Get(ts.URL + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	var body Readiness
	err = json.NewDecoder(r.Body).Decode(&body)
	r.Body.Close()
	if err != nil || r.StatusCode != http.StatusServiceUnavailable || body.Phase != "stopping" || body.Ready || r.Header.Get("Retry-After") == "" {
		t.Fatalf("/ready after Drain: %d %+v %v", r.StatusCode, body, err)
	}
	if r, err := http.Get(ts.URL + "/health"); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("/health after Drain: %v %v", r, err)
	}
	if code := speak(t, ts.URL, ""); code != http.StatusOK {
		t.Fatalf("speech after Drain with the engine free: %d", code)
	}
}

// TestRestartTotalIsTheSumOfTheEngines: the engines' supervisors count
// their restarts; drama_engine_restarts_total is their sum, beside each
// engine's drama_engine_restarts and /ready's per_engine restarts, so the
// figures cannot disagree whoever builds the server over the pool.
func TestRestartTotalIsTheSumOfTheEngines(t *testing.T) {
	ts, ms, _ := startPool(t, 2)
	ms[0].Set(supervise.Status{Phase: "ready", Ready: true, Restarts: 1})
	ms[1].Set(supervise.Status{Phase: "ready", Ready: true, Restarts: 2})
	r, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	for _, want := range []string{`drama_engine_restarts{engine="gpu0-0"} 1`, `drama_engine_restarts{engine="gpu1-0"} 2`, "\ndrama_engine_restarts_total 3\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, b)
		}
	}
	var body Readiness
	r, err = http.Get(ts.URL + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(r.Body).Decode(&body)
	r.Body.Close()
	if len(body.PerEngine) != 2 || body.PerEngine[0].Restarts != 1 || body.PerEngine[1].Restarts != 2 || body.Restarts != 3 {
		t.Fatalf("/ready restarts %+v, want 1 and 2, 3 in all", body)
	}
}

// TestReadyWait: a speech request that finds no engine ready waits up to
// ReadyWait for one and is served when one becomes ready meanwhile; past
// ReadyWait, or with none, it gets its 503 engine_not_ready.
func TestReadyWait(t *testing.T) {
	notReady := supervise.Status{Phase: "restarting", Message: "the engine failed: restarting it"}
	answer := func(url string) (int, string) {
		r := post(t, url, `{"input":"hello","stream":false}`)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		return r.StatusCode, string(b)
	}
	ts, ms, _ := startPool(t, 1)
	ms[0].Set(notReady)
	if code, body := answer(ts.URL); code != 503 || !strings.Contains(body, `"code":"engine_not_ready"`) {
		t.Fatalf("no ReadyWait, no engine ready: %d %s", code, body)
	}

	ts, ms, _ = startPool(t, 1, func(c *Config) { c.ReadyWait = 30 * time.Millisecond })
	ms[0].Set(notReady)
	if code, body := answer(ts.URL); code != 503 || !strings.Contains(body, `"code":"engine_not_ready"`) || !strings.Contains(body, "restarting") {
		t.Fatalf("past ReadyWait: %d %s", code, body)
	}

	ts, ms, p := startPool(t, 2, func(c *Config) { c.ReadyWait = time.Minute })
	ms[0].Set(notReady)
	ms[1].Set(notReady)
	got := make(chan int, 1)
	go func() { code, _ := answer(ts.URL); got <- code }()
	enginetest.WaitFor(t, func() bool { return p.Depth() == 1 }) // the request waits in the queue
	ms[1].Set(supervise.Status{Phase: "ready", Ready: true})
	if code := <-got; code != 200 {
		t.Fatalf("an engine ready within ReadyWait: %d, want 200", code)
	}
	if v := ms[1].eng.spoke(); len(v) != 1 {
		t.Fatalf("the engine that became ready spoke %d times, want 1", len(v))
	}
}
