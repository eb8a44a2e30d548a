package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine"
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
	te, url := stallOneClient(t)
	// the client's 4 KiB (8 KiB as Linux doubles it), what may lie unsent,
	// the piece being written, and the reply's buffers with the fake's
	// frame in hand (4 KiB)
	const bound = 8<<10 + replyUnsent + stallPiece + 8<<10
	if n := te.taken.Load(); n > bound {
		t.Fatalf("the stalled client's reply took %d bytes of audio from the engine before it was cut; want at most %d: the engine made audio into the connection's buffers after the client had stopped taking it", n, bound)
	}

	// 11 runes: 221 frames, 0.9 MB, far more than may lie unsent
	resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"read it all","response_format":"pcm","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || len(got) != 221*engine.SamplesPerFrame*2 || resp.Trailer.Get("X-Finish-Reason") != "stop" {
		t.Fatalf("a reading client after the cut: status %d, %d bytes, finish %q, err %v", resp.StatusCode, len(got), resp.Trailer.Get("X-Finish-Reason"), err)
	}
}
