package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
)

// TestStalledClientLeavesLittleUnsent: a client with a tiny receive
// buffer takes the first few kilobytes of a long streamed synthesis from
// an engine as fast as it can go, and then reads nothing. Its window
// closes, and the reply's writes block once replyUnsent more lies unsent,
// which starts the stall timeout: by the cut the reply has taken from the
// engine the client's window, replyUnsent, and the pieces in hand. A send
// buffer bounded to 64 KiB lets the engine fill it first (about 100 KiB on
// loopback), so the timeout starts later by that much audio. A client that
// reads is then served in full, over the same bound, with its finish
// reason.
func TestStalledClientLeavesLittleUnsent(t *testing.T) {
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
	// the client's 4 KiB (8 KiB as Linux doubles it), what may lie unsent,
	// the piece being written, and the reply's buffers with the fake's
	// frame in hand (4 KiB)
	const bound = 8<<10 + replyUnsent + stallPiece + 8<<10
	if n := te.taken.Load(); n > bound {
		t.Fatalf("the stalled client's reply took %d bytes of audio from the engine before it was cut; want at most %d: the engine made audio into the connection's buffers after the client had stopped taking it", n, bound)
	}

	// 11 runes: 221 frames, 0.9 MB, far more than may lie unsent
	resp, err := http.Post(ts.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"read it all","response_format":"pcm","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || len(got) != 221*engine.SamplesPerFrame*2 || resp.Trailer.Get("X-Finish-Reason") != "stop" {
		t.Fatalf("a reading client after the cut: status %d, %d bytes, finish %q, err %v", resp.StatusCode, len(got), resp.Trailer.Get("X-Finish-Reason"), err)
	}
}
