package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
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
)

// startBound starts a server that knows the address it is bound to, as
// drama serve does.
func startBound(t *testing.T, tune func(*Config)) (*httptest.Server, *Server) {
	t.Helper()
	fake := enginetest.NewFake()
	fake.FrameDelay = 0
	if err := fake.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Stop(context.Background(), engine.StopRequest{}) })
	ts := httptest.NewUnstartedServer(nil)
	cfg := Config{Caps: fake.Desc.Capabilities, Addr: ts.Listener.Addr().String(), Voices: &recordingStore{}}
	if tune != nil {
		tune(&cfg)
	}
	srv := New(pooltest.New(t, pool.Options{MaxQueue: DefaultMaxQueue}, pooltest.NewMember(fake)), cfg)
	ts.Config.Handler = srv.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, srv
}

// rawReply is a reply read off a raw connection.
type rawReply struct {
	Status int
	Header http.Header
	Body   string
}

// rawSend sends head (request line and headers, without the blank line)
// and body over a new connection and reads the reply (rawOpen); Status is
// 0 when the connection closed without one.
func rawSend(t *testing.T, addr, head string, body []byte) rawReply {
	t.Helper()
	conn, br, x := rawOpen(t, addr, head, body)
	defer conn.Close()
	b, _ := io.ReadAll(br)
	return rawReply{Status: x.Status, Header: x.Header, Body: string(b)}
}

// cloneForm is a multipart clone request as a web page's form would post
// it: no preflight is needed for it.
func cloneForm(t *testing.T, clip []byte) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("name", "Stolen")
	mw.WriteField("source", "synthetic")
	fw, _ := mw.CreateFormFile("clip", "a.wav")
	fw.Write(clip)
	mw.WriteField("transcript", "Hello there.")
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

// recordingStore is a VoiceStore that records the clones it is asked for;
// hold, when set, blocks Clone until it is closed.
type recordingStore struct {
	clones atomic.Int32
	hold   chan struct{}
	seen   func(CloneRequest)
}

func (s *recordingStore) List(context.Context) ([]VoiceInfo, error) { return []VoiceInfo{}, nil }
func (s *recordingStore) References(context.Context, string) ([]engine.Reference, error) {
	return nil, ErrVoiceNotFound
}
func (s *recordingStore) Delete(context.Context, string) error { return ErrVoiceNotFound }
func (s *recordingStore) Clone(ctx context.Context, req CloneRequest) (VoiceInfo, error) {
	s.clones.Add(1)
	if s.seen != nil {
		s.seen(req)
	}
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-ctx.Done():
			return VoiceInfo{}, ctx.Err()
		}
	}
	return VoiceInfo{ID: "stolen", Name: req.Name, Origin: "clone"}, nil
}

func TestCrossSiteFormPostRefused(t *testing.T) {
	ts, srv := startBound(t, nil)
	store := srv.cfg.Voices.(*recordingStore)
	addr := ts.Listener.Addr().String()
	ct, body := cloneForm(t, []byte("RIFF"))
	for name, headers := range map[string]string{
		"Origin of another site":        "Origin: http://evil.example",
		"Origin of another port":        "Origin: http://" + strings.Split(addr, ":")[0] + ":1",
		"opaque origin":                 "Origin: null",
		"Sec-Fetch-Site without Origin": "Sec-Fetch-Site: cross-site",
	} {
		r := rawSend(t, addr, "POST /v1/voices HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: "+ct+"\r\n"+headers, body)
		if r.Status != http.StatusForbidden || !strings.Contains(r.Body, "--allow-origin") || !strings.Contains(r.Body, `"origin_not_allowed"`) {
			t.Errorf("%s: %d %s, want a 403 naming --allow-origin", name, r.Status, r.Body)
		}
	}
	if n := store.clones.Load(); n != 0 {
		t.Fatalf("%d voices were cloned for pages of other sites", n)
	}
	// the server's own origin, and clients that are not browsers, pass
	for name, headers := range map[string]string{
		"own origin":    "Origin: http://" + addr + "\r\nSec-Fetch-Site: same-origin",
		"not a browser": "User-Agent: curl/8",
	} {
		if r := rawSend(t, addr, "POST /v1/voices HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: "+ct+"\r\n"+headers, body); r.Status != http.StatusCreated {
			t.Errorf("%s: %d %s, want 201", name, r.Status, r.Body)
		}
	}
}

func TestRebindingHostRefused(t *testing.T) {
	ts, _ := startBound(t, func(c *Config) { c.AllowHosts = []string{"tts.lan"} })
	addr := ts.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	body := []byte(`{"input":"hello"}`)
	for _, host := range []string{"attacker.example:" + port, "attacker.example", "10.9.8.7:" + port, "127.0.0.2:" + port} {
		for _, route := range []string{"GET /v1/models", "GET /v1/voices", "POST /v1/audio/speech", "GET /metrics"} {
			r := rawSend(t, addr, route+" HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json", body)
			if r.Status != http.StatusMisdirectedRequest || !strings.Contains(r.Body, "--allow-host") {
				t.Errorf("%s with Host %q: %d %s, want 421 naming --allow-host", route, host, r.Status, r.Body)
			}
		}
	}
	for _, host := range []string{addr, "localhost:" + port, "LocalHost", "tts.lan:" + port} {
		if r := rawSend(t, addr, "GET /v1/models HTTP/1.1\r\nHost: "+host, nil); r.Status != http.StatusOK {
			t.Errorf("Host %q: %d %s, want 200", host, r.Status, r.Body)
		}
	}
	// an HTTP/1.0 client may send no Host at all
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(conn, "GET /v1/models HTTP/1.0\r\n\r\n")
	if line, _ := bufio.NewReader(conn).ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.0 200") && !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Errorf("HTTP/1.0 without Host: %q", line)
	}
}

func TestAllowedOriginGetsCORS(t *testing.T) {
	ts, _ := startBound(t, func(c *Config) { c.AllowOrigins = []string{"https://app.example"} })
	addr := ts.Listener.Addr().String()
	pre := rawSend(t, addr, "OPTIONS /v1/audio/speech HTTP/1.1\r\nHost: "+addr+"\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type, authorization", nil)
	if pre.Status != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "POST") || pre.Header.Get("Access-Control-Allow-Headers") != "content-type, authorization" {
		t.Fatalf("preflight: %d %v", pre.Status, pre.Header)
	}
	r := rawSend(t, addr, "POST /v1/audio/speech HTTP/1.1\r\nHost: "+addr+"\r\nOrigin: https://app.example\r\nSec-Fetch-Site: cross-site\r\nContent-Type: application/json", []byte(`{"input":"hello"}`))
	if r.Status != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id") || r.Header.Get("Vary") != "Origin" {
		t.Fatalf("allowed origin: %d %v", r.Status, r.Header)
	}
	other := rawSend(t, addr, "OPTIONS /v1/audio/speech HTTP/1.1\r\nHost: "+addr+"\r\nOrigin: https://other.example\r\nAccess-Control-Request-Method: POST", nil)
	if other.Status != http.StatusForbidden || other.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight of another origin: %d %v", other.Status, other.Header)
	}
}
