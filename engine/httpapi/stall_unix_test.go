//go:build unix

package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
)

// dialTinyWindow connects with a 4 KiB receive buffer, set before the
// connection is made so the window it offers stays small.
func dialTinyWindow(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestStalledClientIsCut: a client with a tiny receive buffer asks for a
// long streamed synthesis and never reads. It is cut after the stall
// timeout, its synthesis is cancelled, the next client is served, and the
// cut is counted, as a cut reply whose cause is the client's
// (client_stalled): neither the log nor the metrics say the engine or the
// encoder failed, and the engine is not reported failed.
func TestStalledClientIsCut(t *testing.T) {
	ff := fakeFFmpeg(t)
	for _, mode := range []string{`"stream":true`, `"stream":false`, `"stream_format":"sse"`, `"response_format":"mp3"`} {
		t.Run(mode, func(t *testing.T) {
			var logs enginetest.Buffer
			fails := &failureCount{}
			_, _, ce, srv := startFake(t, func(f *enginetest.Fake, c *served) {
				f.FramesPerRune = 20 // about 8 MB of audio: far more than the socket buffers hold
				c.StallTimeout = 300 * time.Millisecond
				c.FFmpeg = ff
				c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				c.Failures = fails
			})
			var mu sync.Mutex
			var speech []Outcome // of the speech requests
			h := srv.Handler()
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r.WithContext(WithOutcome(r.Context(), func(o Outcome) {
					if r.Method == http.MethodPost {
						mu.Lock()
						speech = append(speech, o)
						mu.Unlock()
					}
				})))
			}))
			t.Cleanup(ts.Close)
			conn := dialTinyWindow(t, strings.TrimPrefix(ts.URL, "http://"))
			body := `{"input":"` + strings.Repeat("word ", 20) + `",` + mode + `}`
			fmt.Fprintf(conn, "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			enginetest.WaitFor(t, func() bool { return ce.peak.Load() == 1 })

			client := &http.Client{Timeout: 30 * time.Second}
			resp, err := client.Post(ts.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"the next client"}`))
			if err != nil {
				t.Fatalf("the next client was not served while one client stopped reading: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("next client: %d", resp.StatusCode)
			}
			if ce.active.Load() != 0 {
				t.Fatalf("%d syntheses still running: the stalled client's was not cancelled", ce.active.Load())
			}
			_, m := rawGet(t, ts.URL, "/metrics")
			if !strings.Contains(string(m), "drama_stalled_clients_total 1\n") {
				t.Fatalf("metrics do not count the cut client:\n%s", m)
			}
			if n := cutCount(t, ts.URL, "client_stalled"); n != 1 {
				t.Fatalf("drama_replies_cut_total{reason=\"client_stalled\"} is %d, want 1 (client_closed %d)", n, cutCount(t, ts.URL, "client_closed"))
			}
			if e, f := cutCount(t, ts.URL, "engine_failed"), cutCount(t, ts.URL, "encoder_failed"); e != 0 || f != 0 {
				t.Fatalf("a stalled client was counted as a failure of the engine (%d) or of the encoder (%d)", e, f)
			}
			got := logs.String()
			if !strings.Contains(got, "code=client_stalled") || strings.Contains(got, "engine_failed") || strings.Contains(got, "ffmpeg failed") || strings.Contains(got, "level=ERROR") {
				t.Fatalf("the log does not name the client as the cause of its cut:\n%s", got)
			}
			if fails.n.Load() != 0 {
				t.Fatalf("a stalled client was reported as an engine failure %d times", fails.n.Load())
			}
			enginetest.WaitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(speech) == 2 })
			mu.Lock()
			defer mu.Unlock()
			if len(speech) != 2 || !slices.Contains(speech, Outcome{Code: "client_stalled", Cut: true}) || !slices.Contains(speech, Outcome{}) {
				t.Fatalf("outcomes %+v: want the stalled client's reply cut for client_stalled and the next one complete", speech)
			}
		})
	}
}

// takenStream counts the PCM bytes a reply has taken from the engine.
type takenStream struct {
	engine.AudioStream
	taken *atomic.Int64
}

func (s takenStream) Next() ([]byte, error) {
	p, err := s.AudioStream.Next()
	s.taken.Add(int64(len(p)))
	return p, err
}

type takenEngine struct {
	engine.Speech
	taken atomic.Int64
}

func (e *takenEngine) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	st, err := e.Speech.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	return takenStream{AudioStream: st, taken: &e.taken}, nil
}

// TestStalledClientBoundsAudioAhead: a client with a tiny receive buffer
// asks for a long streamed synthesis from an engine as fast as it can go
// and never reads. By the time it is cut, its reply has taken from the
// engine no more than the bounded send buffer and the reply's own pieces
// hold: the stall shows, and the stall timeout starts, before the engine
// has made much audio no one will take. Left to the kernel, loopback's
// send buffer grows to megabytes, all of it made before the timeout starts.
func TestStalledClientBoundsAudioAhead(t *testing.T) {
	te, _ := stallOneClient(t)
	// the send buffer where it is bounded (Linux doubles replyWindow; on
	// Linux what waits unsent is bounded instead, to far less), the
	// client's 4 KiB, the reply's pieces and buffers, and the chunk in hand
	const bound = 2*replyWindow + 4<<10 + stallPiece + 8<<10 + engine.MaxChunk
	if n := te.taken.Load(); n > bound {
		t.Fatalf("the stalled client's reply took %d bytes of audio from the engine before it was cut; want at most %d: the connection's send buffer is not bounded", n, bound)
	}
}

// stallOneClient starts a server over a fast fake engine (about 8 MB of
// audio a request, a 300 ms stall timeout) whose connections bound their
// replies (ConnContext), sends it a long streamed synthesis from a client
// with a tiny receive buffer that never reads, and returns once the
// server has cut that client for stalling: the engine, which counts the
// audio taken from it, and the server's URL.
func stallOneClient(t *testing.T) (*takenEngine, string) {
	t.Helper()
	var te *takenEngine
	_, _, _, srv := startFake(t, func(f *enginetest.Fake, c *served) {
		f.FramesPerRune = 20 // about 8 MB of audio
		c.StallTimeout = 300 * time.Millisecond
		te = &takenEngine{Speech: c.Engine}
		c.Engine = te
	})
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.ConnContext = ConnContext
	ts.Start()
	t.Cleanup(ts.Close)
	conn := dialTinyWindow(t, strings.TrimPrefix(ts.URL, "http://"))
	body := `{"input":"` + strings.Repeat("word ", 20) + `","response_format":"pcm","stream":true}`
	fmt.Fprintf(conn, "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	enginetest.WaitFor(t, func() bool {
		_, m := rawGet(t, ts.URL, "/metrics")
		return strings.Contains(string(m), "drama_stalled_clients_total 1\n")
	})
	return te, ts.URL
}
