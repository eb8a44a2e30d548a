package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
)

// TestWholeReplyCopiesTheAudioOnce: a whole reply of 4 MiB of audio, in
// the engine's chunks, is held with no more memory than its own size and
// a little: the audio is copied once, not again and again into a buffer
// that grows.
func TestWholeReplyCopiesTheAudioOnce(t *testing.T) {
	const size = 4 << 20
	chunk := make([]byte, engine.MaxChunk)
	var sink bufferSink
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sink.Write(wavHeader(-1))
	for n := 0; n < size; n += len(chunk) {
		sink.Write(chunk)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > size+size/8 {
		t.Fatalf("holding %d bytes of a whole reply allocated %d bytes: the audio is copied more than once", size, got)
	}
}

// readWhole sends body to /v1/audio/speech over proto on a fresh
// connection and reads the reply's body up to its Content-Length, or to
// the connection's end when it is cut short (Complete says which); first,
// when set, is called once the headers and the first body byte have
// arrived.
func readWhole(t *testing.T, url, proto, body string, first func()) rawExchange {
	t.Helper()
	conn, br, r := rawSpeech(t, url, proto, http.MethodPost, "/v1/audio/speech", body)
	defer conn.Close()
	n, err := strconv.Atoi(r.Header.Get("Content-Length"))
	if err != nil {
		t.Fatalf("status %d, headers %v: a whole reply has a Content-Length", r.Status, r.Header)
	}
	if first != nil && n > 0 {
		if _, err := br.Peek(1); err == nil {
			first()
		}
	}
	r.Body, _ = io.ReadAll(io.LimitReader(br, int64(n)))
	r.Complete = len(r.Body) == n
	return r
}

// TestSizedWholeReplyGoesOutAsTheAudioArrives: with an engine that says a
// whole synthesis's length and end before its audio (as the native
// engine's whole replies do), a whole WAV or PCM reply, over HTTP/1.1 with
// "stream": false and over HTTP/1.0, starts reaching the client while the
// engine still holds the rest of the audio, and is the very reply, bytes
// and headers, that an engine without the sized header gets: exact WAV
// sizes, Content-Length, X-Finish-Reason (stop, silence, length) as a
// header.
func TestSizedWholeReplyGoesOutAsTheAudioArrives(t *testing.T) {
	var g *gatedEngine
	sized, _, _, _ := startFake(t, func(f *enginetest.Fake, c *served) {
		f.Sized = true
		g = &gatedEngine{Speech: c.Engine}
		c.Engine = g
	})
	collected, _, _, _ := startFake(t, nil)
	long := strings.Repeat("long text ", 60) // many chunks
	for _, c := range []struct{ proto, body, reason string }{
		{"HTTP/1.1", `{"input":"` + long + `","stream":false}`, "stop"},
		{"HTTP/1.1", `{"input":"` + long + `","response_format":"pcm","stream":false}`, "stop"},
		{"HTTP/1.0", `{"input":"` + long + `"}`, "stop"},
		{"HTTP/1.0", `{"input":"` + long + `","response_format":"pcm","stream":true}`, "stop"},
		{"HTTP/1.1", `{"input":"` + long + ` [silence-test]","stream":false}`, "silence"},
		{"HTTP/1.1", `{"input":"` + long + `","max_frames":9,"stream":false}`, "length"},
		{"HTTP/1.1", `{"input":"a","stream":false}`, "stop"},
	} {
		first, early := g.holdUntilFirstBytes()
		r := readWhole(t, sized.URL, c.proto, c.body, first)
		want := readWhole(t, collected.URL, c.proto, c.body, nil)
		name := c.proto + " " + c.body[len(c.body)-min(40, len(c.body)):]
		if ok, what := early(); !ok && len(want.Body) > engine.MaxChunk {
			t.Errorf("%s: no audio reached the client while the engine held the rest (%s): a sized whole reply must go out as its audio arrives", name, what)
		}
		if r.Status != 200 || !r.Complete || r.Header.Get("X-Finish-Reason") != c.reason || r.Header.Get("Transfer-Encoding") != "" {
			t.Fatalf("%s: status %d complete %v headers %v: want a complete whole reply with X-Finish-Reason %s", name, r.Status, r.Complete, r.Header, c.reason)
		}
		if !bytes.Equal(r.Body, want.Body) || r.Header.Get("Content-Type") != want.Header.Get("Content-Type") ||
			r.Header.Get("Content-Length") != want.Header.Get("Content-Length") || r.Header.Get("X-Finish-Reason") != want.Header.Get("X-Finish-Reason") {
			t.Fatalf("%s: %d bytes, headers %v; collected: %d bytes, headers %v", name, len(r.Body), r.Header, len(want.Body), want.Header)
		}
		if r.Header.Get("Content-Type") == "audio/wav" &&
			(int(binary.LittleEndian.Uint32(r.Body[4:])) != len(r.Body)-8 || int(binary.LittleEndian.Uint32(r.Body[40:])) != len(r.Body)-44) {
			t.Fatalf("%s: WAV sizes are not exact", name)
		}
	}
}

// TestSizedWholeReplyFallsBack: what drama serve makes of the audio (an
// encoder's output, another sample rate) has a length known only at its
// end, so such a whole reply is collected and sent complete, with a sized
// header too.
func TestSizedWholeReplyFallsBack(t *testing.T) {
	ff := fakeFFmpeg(t)
	ts, _, _, _ := startFake(t, func(f *enginetest.Fake, c *served) { f.Sized = true; c.FFmpeg = ff })
	pcm := readWhole(t, ts.URL, "HTTP/1.1", `{"input":"Encode me.","response_format":"pcm","stream":false}`, nil)
	r := readWhole(t, ts.URL, "HTTP/1.1", `{"input":"Encode me.","response_format":"mp3","stream":false}`, nil)
	if r.Status != 200 || !r.Complete || string(r.Body) != "ENCODED:"+string(pcm.Body) || r.Header.Get("X-Finish-Reason") != "stop" {
		t.Fatalf("mp3: status %d complete %v headers %v, %d bytes", r.Status, r.Complete, r.Header, len(r.Body))
	}
}

// breakingEngine hands out a sized synthesis whose audio or end is not
// what its header said: it drops the last chunk (short), adds a chunk
// (long) or ends with another finish reason.
type breakingEngine struct {
	engine.Speech
	how string
}

func (b *breakingEngine) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	st, err := b.Speech.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	return &breakingStream{AudioStream: st, how: b.how, left: st.Header().Samples * 2}, nil
}

type breakingStream struct {
	engine.AudioStream
	how   string
	left  int64
	extra bool
}

func (s *breakingStream) Next() ([]byte, error) {
	p, err := s.AudioStream.Next()
	s.left -= int64(len(p))
	switch {
	case s.how == "short" && err == nil && s.left == 0:
		return nil, io.EOF
	case s.how == "long" && errors.Is(err, io.EOF) && !s.extra:
		s.extra = true
		return []byte{1, 2}, nil
	}
	return p, err
}

func (s *breakingStream) Final() engine.Final {
	f := s.AudioStream.Final()
	if s.how == "reason" {
		f.Reason = engine.FinishSilence
	}
	return f
}

// TestSizedWholeReplyFailureIsNeverComplete: a sized whole reply whose
// synthesis fails after its first audio, or whose audio or end differs
// from what the engine's header said, is cut short of its Content-Length,
// which every HTTP client reports as failed, and counted as a cut for the
// engine; a failure before any audio is still a proper error reply,
// without the finish reason of audio that never came.
func TestSizedWholeReplyFailureIsNeverComplete(t *testing.T) {
	long := strings.Repeat("long text ", 60)
	for _, how := range []string{"fail", "short", "long", "reason"} {
		ts, _, _, _ := startFake(t, func(f *enginetest.Fake, c *served) {
			f.Sized = true
			f.FailAfterFirstChunk = how == "fail"
			c.Engine = &breakingEngine{Speech: c.Engine, how: how}
		})
		for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
			r := readWhole(t, ts.URL, proto, `{"input":"`+long+`","stream":false}`, nil)
			if r.Status != 200 || r.Complete || len(r.Body) == 0 {
				t.Fatalf("%s %s: status %d, %d of %s bytes, complete %v: want the reply begun and cut short", how, proto, r.Status, len(r.Body), r.Header.Get("Content-Length"), r.Complete)
			}
		}
		enginetest.WaitFor(t, func() bool { return cutCount(t, ts.URL, "engine_failed") == 2 })
	}
	ts, _, _, _ := startFake(t, func(f *enginetest.Fake, c *served) { f.Sized = true; c.Engine = &firstNextFails{Speech: c.Engine} })
	r := rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", `{"input":"`+long+`","stream":false}`, nil)
	var e struct{ Error struct{ Code string } }
	if r.Status != 500 || json.Unmarshal(r.Body, &e) != nil || e.Error.Code != "engine_failed" || r.Header.Get("X-Finish-Reason") != "" {
		t.Fatalf("a failure before the first audio: status %d, headers %v, body %.200q: want a 500 engine_failed without X-Finish-Reason", r.Status, r.Header, r.Body)
	}
}

// firstNextFails fails a synthesis at its first audio.
type firstNextFails struct{ engine.Speech }

func (f *firstNextFails) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	st, err := f.Speech.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	return &failingStream{AudioStream: st, calls: 1}, nil
}
