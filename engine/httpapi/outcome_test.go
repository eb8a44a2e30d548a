package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
)

// failureCount counts the engine failures a server reports.
type failureCount struct{ n atomic.Int32 }

func (f *failureCount) EngineFailed(error) { f.n.Add(1) }

// cutCount reads drama_replies_cut_total{reason} from GET /metrics; -1
// when the series is missing.
func cutCount(t *testing.T, url, reason string) int {
	t.Helper()
	_, m := rawGet(t, url, "/metrics")
	re := regexp.MustCompile(`(?m)^drama_replies_cut_total\{reason="` + reason + `"\} (\d+)$`)
	g := re.FindSubmatch(m)
	if g == nil {
		return -1
	}
	n := 0
	for _, c := range g[1] {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestEngineFailureMidReplyIsCountedAsCut: a synthesis that fails after
// its reply began leaves status 200 in drama_requests_total, and
// drama_replies_cut_total{reason="engine_failed"} tells the truth; the
// log line names the engine as the cause.
func TestEngineFailureMidReplyIsCountedAsCut(t *testing.T) {
	var logs enginetest.Buffer
	fails := &failureCount{}
	ts, _, _, _ := startFake(t, func(f *enginetest.Fake, c *served) {
		f.FailAfterFirstChunk = true
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Failures = fails
	})
	if n := cutCount(t, ts.URL, "engine_failed"); n != 0 {
		t.Fatalf("before any request: drama_replies_cut_total{reason=\"engine_failed\"} is %d, want 0 (a known cause is there from the start)", n)
	}
	r := rawPost(t, ts.URL, `{"input":"`+strings.Repeat("long text ", 100)+`","stream":true,"response_format":"pcm"}`)
	if r.Status != 200 || r.Terminated {
		t.Fatalf("status %d, terminated %v: want a 200 cut short", r.Status, r.Terminated)
	}
	enginetest.WaitFor(t, func() bool { return cutCount(t, ts.URL, "engine_failed") == 1 })
	_, m := rawGet(t, ts.URL, "/metrics")
	if !strings.Contains(string(m), "# TYPE drama_replies_cut_total counter\n") || cutCount(t, ts.URL, "client_stalled") != 0 {
		t.Fatalf("metrics:\n%s", m)
	}
	if !strings.Contains(logs.String(), "synthesis failed after its reply began") || !strings.Contains(logs.String(), "code=engine_failed") {
		t.Fatalf("log does not name the engine as the cause:\n%s", logs.String())
	}
	if fails.n.Load() != 1 {
		t.Fatalf("the engine's failure was reported %d times, want 1", fails.n.Load())
	}
}

// TestClientGoneMidReplyIsTheClients: a client that hangs up during its
// streamed reply is counted as client_closed, logged as the client's
// doing, and never reported as an engine failure.
func TestClientGoneMidReplyIsTheClients(t *testing.T) {
	var logs enginetest.Buffer
	fails := &failureCount{}
	ts, _, ce, _ := startFake(t, func(f *enginetest.Fake, c *served) {
		f.FrameDelay = 5 * time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Failures = fails
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"input":"` + strings.Repeat("many words ", 100) + `","stream":true,"response_format":"pcm"}`
	fmt.Fprintf(conn, "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(conn, make([]byte, 4096)); err != nil { // the headers and the first audio
		t.Fatal(err)
	}
	conn.Close() // hangs up
	enginetest.WaitFor(t, func() bool { return ce.active.Load() == 0 && cutCount(t, ts.URL, "client_closed") == 1 })
	if n := cutCount(t, ts.URL, "engine_failed"); n != 0 {
		t.Fatalf("a client that hung up was counted as an engine failure (%d)", n)
	}
	got := logs.String()
	if strings.Contains(got, "engine_failed") || strings.Contains(got, "synthesis failed") || !strings.Contains(got, "code=client_closed") {
		t.Fatalf("log does not name the client as the cause:\n%s", got)
	}
	if fails.n.Load() != 0 {
		t.Fatalf("a client that hung up was reported as an engine failure %d times", fails.n.Load())
	}
}
