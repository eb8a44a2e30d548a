package httpapi

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/pool/pooltest"
	"github.com/drama-tts/drama/engine/supervise"
)

// countingEngine records the most syntheses it ever saw at once.
type countingEngine struct {
	engine.Engine
	active, peak atomic.Int32
	order        chan string
}

func (c *countingEngine) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	n := c.active.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	st, err := c.Engine.Synthesize(ctx, req)
	if err != nil {
		c.active.Add(-1)
		return nil, err
	}
	if c.order != nil {
		c.order <- req.Input
	}
	return &countedStream{AudioStream: st, done: func() { c.active.Add(-1) }}, nil
}

type countedStream struct {
	engine.AudioStream
	done   func()
	closed atomic.Bool
}

func (s *countedStream) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		s.done()
	}
	return s.AudioStream.Close()
}

// served is what startFake serves: the API's Config, and the pool's one
// engine (the fake behind a countingEngine, which a test may wrap), the
// pool's queue bound (8), the engine's status when a test sets one (else
// ready), and who else is told of the engine's failures.
type served struct {
	Config
	Engine   engine.Speech
	MaxQueue int
	Status   supervise.Status
	Failures interface{ EngineFailed(error) }
}

// startFake starts a fake engine and an API server in front of it, over a
// pool of that one engine.
func startFake(t *testing.T, tune func(*enginetest.Fake, *served)) (*httptest.Server, *enginetest.Fake, *countingEngine, *Server) {
	t.Helper()
	fake := enginetest.NewFake()
	fake.FrameDelay = 0
	ce := &countingEngine{Engine: fake}
	c := served{Config: Config{Caps: fake.Desc.Capabilities, Model: "drama-3-test"}, Engine: ce, MaxQueue: 8}
	if tune != nil {
		tune(fake, &c)
	}
	if err := fake.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Stop(context.Background(), engine.StopRequest{}) })
	m := pooltest.NewMember(c.Engine)
	if c.Status.Phase != "" {
		m.Set(c.Status)
	}
	if c.Failures != nil {
		m.OnFailure = c.Failures.EngineFailed
	}
	srv := New(pooltest.New(t, pool.Options{MaxQueue: c.MaxQueue}, m), c.Config)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts, fake, ce, srv
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// rawPost posts body to /v1/audio/speech over HTTP/1.1 on a fresh
// connection and reads the response byte by byte (see rawDo).
func rawPost(t *testing.T, url, body string) rawExchange {
	t.Helper()
	return rawDo(t, url, "HTTP/1.1", http.MethodPost, "/v1/audio/speech", body, nil)
}

func readHeaders(br *bufio.Reader) http.Header {
	h := http.Header{}
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if err != nil || line == "" {
			return h
		}
		k, v, _ := strings.Cut(line, ":")
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
}
