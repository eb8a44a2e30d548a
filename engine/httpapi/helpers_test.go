package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
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

// startFake starts a fake engine and an API server in front of it.
func startFake(t *testing.T, tune func(*enginetest.Fake, *Config)) (*httptest.Server, *enginetest.Fake, *countingEngine, *Server) {
	t.Helper()
	fake := enginetest.NewFake()
	fake.FrameDelay = 0
	ce := &countingEngine{Engine: fake}
	cfg := Config{Engine: ce, Caps: fake.Desc.Capabilities, Model: "drama-3-test", MaxQueue: 8}
	if tune != nil {
		tune(fake, &cfg)
	}
	if err := fake.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Stop(context.Background(), engine.StopRequest{}) })
	srv := New(cfg)
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

// rawResponse is a response read byte by byte off the connection, with the
// chunked body decoded here rather than by net/http, so a missing
// terminating chunk and the trailers are seen exactly.
type rawResponse struct {
	Status     int
	Header     http.Header
	Body       []byte
	Trailer    http.Header
	Terminated bool // the zero-length chunk arrived
}

func rawPost(t *testing.T, url, body string) rawResponse {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nTE: trailers\r\nConnection: close\r\n\r\n%s", len(body), body)
	br := bufio.NewReader(conn)
	var r rawResponse
	line, _ := br.ReadString('\n')
	fmt.Sscanf(line, "HTTP/1.1 %d", &r.Status)
	r.Header = readHeaders(br)
	if r.Header.Get("Transfer-Encoding") != "chunked" {
		r.Body, _ = io.ReadAll(br)
		return r
	}
	for {
		sizeLine, err := br.ReadString('\n')
		if err != nil {
			return r
		}
		n, err := strconv.ParseInt(strings.TrimSpace(sizeLine), 16, 64)
		if err != nil {
			t.Fatalf("bad chunk size line %q", sizeLine)
		}
		if n == 0 {
			r.Terminated = true
			r.Trailer = readHeaders(br)
			return r
		}
		chunk := make([]byte, n+2)
		if _, err := io.ReadFull(br, chunk); err != nil {
			return r
		}
		r.Body = append(r.Body, chunk[:n]...)
	}
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
