package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/drama-tts/drama/engine/enginetest"
)

type liveClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialLive(t *testing.T, url string, h http.Header) *liveClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/v1/tts/live", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &liveClient{t: t, c: c}
}

func (l *liveClient) send(ev map[string]any) {
	l.t.Helper()
	b, _ := msgpack.Marshal(ev)
	if err := l.c.Write(context.Background(), websocket.MessageBinary, b); err != nil {
		l.t.Fatal(err)
	}
}

// next reads the server's next event.
func (l *liveClient) next() map[string]any {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := l.c.Read(ctx)
	if err != nil {
		l.t.Fatalf("read: %v", err)
	}
	var ev map[string]any
	if err := msgpack.Unmarshal(b, &ev); err != nil {
		l.t.Fatal(err)
	}
	return ev
}

// rest reads audio until the finish event and returns both.
func (l *liveClient) rest() ([]byte, map[string]any) {
	var audio []byte
	for {
		ev := l.next()
		switch ev["event"] {
		case "audio":
			audio = append(audio, ev["audio"].([]byte)...)
		case "finish":
			return audio, ev
		}
	}
}

// TestLiveSpeaksSentencesAsTheyCome: the first sentence is spoken (its
// audio sent) before the client sends the rest of its text, and the
// session's audio is each sentence's audio of POST /v1/tts, in order.
func TestLiveSpeaksSentencesAsTheyCome(t *testing.T) {
	url, _ := startFish(t)
	l := dialLive(t, url, nil)
	l.send(map[string]any{"event": "start", "request": map[string]any{"text": "", "format": "pcm", "reference_id": "alice"}})
	l.send(map[string]any{"event": "text", "text": "The first sentence is"})
	l.send(map[string]any{"event": "text", "text": " complete now. And the"})
	if ev := l.next(); ev["event"] != "audio" || len(ev["audio"].([]byte)) == 0 {
		t.Fatalf("first event %v: want the first sentence's audio before the rest of the text", ev["event"])
	}
	l.send(map[string]any{"event": "text", "text": " second one follows"})
	l.send(map[string]any{"event": "flush"})
	l.send(map[string]any{"event": "text", "text": "A third after a flush."})
	l.send(map[string]any{"event": "stop"})
	audio, fin := l.rest()
	if fin["reason"] != "stop" {
		t.Fatalf("finish %v", fin)
	}
	var want []byte
	for _, s := range []string{"The first sentence is complete now.", "And the second one follows", "A third after a flush."} {
		resp, b := tts(t, url, "application/msgpack", mp(t, map[string]any{"text": s, "format": "pcm", "reference_id": "alice"}), nil)
		if resp.StatusCode != 200 {
			t.Fatal(resp.StatusCode)
		}
		want = append(want, b...)
	}
	// the first chunk of the first sentence was read above
	if !bytes.HasSuffix(want, audio) || len(want)-len(audio) > 64<<10 || len(audio) == 0 {
		t.Fatalf("the session's audio (%d bytes after its first chunk) is not the sentences' audio in order (%d bytes)", len(audio), len(want))
	}
}

// TestLiveRefusals: a session that does not begin with start, asks for
// what POST /v1/tts refuses, or falls silent ends with a finish error.
func TestLiveRefusals(t *testing.T) {
	store := newMemStore()
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Voices = store; c.LiveIdle = 200 * time.Millisecond })
	for name, c := range map[string]struct {
		events []map[string]any
		want   string
	}{
		"text first":   {[]map[string]any{{"event": "text", "text": "Hi."}}, "start event"},
		"speed":        {[]map[string]any{{"event": "start", "request": map[string]any{"text": "", "format": "pcm", "prosody": map[string]any{"speed": 2}}}}, "speed"},
		"unknown":      {[]map[string]any{{"event": "start", "request": map[string]any{"text": "", "format": "pcm", "reference_id": "nobody"}}}, "nobody"},
		"idle":         {[]map[string]any{{"event": "start", "request": map[string]any{"text": "", "format": "pcm"}}}, "no event came"},
		"second start": {[]map[string]any{{"event": "start", "request": map[string]any{"format": "pcm"}}, {"event": "start", "request": map[string]any{"format": "pcm"}}}, "second start"},
	} {
		l := dialLive(t, ts.URL, nil)
		for _, ev := range c.events {
			l.send(ev)
		}
		_, fin := l.rest()
		if fin["reason"] != "error" || !strings.Contains(fin["message"].(string), c.want) {
			t.Errorf("%s: finish %v, want an error naming %q", name, fin, c.want)
		}
	}
}

func TestSentenceEnd(t *testing.T) {
	for in, want := range map[string]int{
		"Hello there. More": 12, "Pi is 3.14 and": -1, "Wait! ": 5, "你好。再见": 9, "One\n\nTwo": 4, "No end": -1, "End.": -1,
	} {
		if got := sentenceEnd(in); got != want {
			t.Errorf("sentenceEnd(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestLiveOriginRefused: a page of another site cannot open a session
// (the guard that wraps every route answers the upgrade 403).
func TestLiveOriginRefused(t *testing.T) {
	url, _ := startFish(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/v1/tts/live", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a cross-origin session: %v %v, want a 403", err, resp)
	}
}

// waitWriter tells, once, that its first bytes came.
type waitWriter struct {
	bytes.Buffer
	first chan struct{}
}

func (w *waitWriter) Write(p []byte) (int, error) {
	if w.Len() == 0 {
		close(w.first)
	}
	return w.Buffer.Write(p)
}

// TestSpeakLiveStreams: SpeakLive sends text as it is read and writes
// audio as it comes: the first sentence's audio arrives while the rest of
// the text has not been written; a character cut between two reads
// arrives whole; a refused session is a LiveRefused with the server's
// answer.
func TestSpeakLiveStreams(t *testing.T) {
	url, _ := startFish(t)
	ws := "ws" + strings.TrimPrefix(url, "http") + "/v1/tts/live"
	pr, pw := io.Pipe()
	out := &waitWriter{first: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := SpeakLive(context.Background(), nil, ws, "", LiveRequest{Format: "pcm"}, pr, out)
		done <- err
	}()
	pw.Write([]byte("First words. Then \xc3"))
	select {
	case <-out.first:
	case <-time.After(10 * time.Second):
		t.Fatal("no audio of the first sentence while the rest of the text is held back")
	}
	pw.Write([]byte("\xbcber more.\n"))
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, s := range []string{"First words.", "Then über more."} {
		_, b := tts(t, url, "application/msgpack", mp(t, map[string]any{"text": s, "format": "pcm"}), nil)
		want = append(want, b...)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("%d bytes, want the two sentences' %d", out.Len(), len(want))
	}
	keyed, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Keys = testKeys(t) })
	_, err := SpeakLive(context.Background(), nil, "ws"+strings.TrimPrefix(keyed.URL, "http")+"/v1/tts/live", "wrong-key-0123456789abcdef", LiveRequest{Format: "pcm"}, strings.NewReader("Hi."), io.Discard)
	var refused *LiveRefused
	if !errors.As(err, &refused) || refused.Response.StatusCode != 401 {
		t.Fatalf("a wrong key: %v, want a LiveRefused 401", err)
	}
}
