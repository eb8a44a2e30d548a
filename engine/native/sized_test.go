//go:build unix

package native_test

import (
	"context"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
)

// TestWholeReplyHeaderIsSized: a whole synthesis's header says, before the
// audio, its exact length, finish reason and long-form segments (the
// server's WAV header and X-Finish-Reason come first), and they are what
// the synthesis delivers; a stream's header is not sized.
func TestWholeReplyHeaderIsSized(t *testing.T) {
	e, _ := started(t, native.CUDA, func(r *engine.StartRequest) { r.LongForm = true; r.MaxFrames = 4000 })
	long := strings.Repeat("A sentence of a long text goes here. ", 20)
	for _, req := range []engine.SynthesisRequest{
		{Input: "Hello there."},
		{Input: long},
		{Input: "Clipped at the frame limit, this one is.", MaxFrames: 3},
	} {
		r, err := enginetest.Synthesize(context.Background(), e, req)
		if err != nil {
			t.Fatal(err)
		}
		h := r.Header
		if !h.Sized || h.Samples != int64(len(r.PCM)/2) || h.Reason != r.Final.Reason || h.Reason == engine.FinishUnknown ||
			len(h.SegmentOffsets) != len(r.Final.SegmentOffsets) || h.LongFormSegments != r.Final.LongFormSegments {
			t.Errorf("%.20q: header %+v, want sized to the %d samples and the end %+v it delivered", req.Input, h, len(r.PCM)/2, r.Final)
		}
		req.Stream = true
		s, err := enginetest.Synthesize(context.Background(), e, req)
		if err != nil {
			t.Fatal(err)
		}
		if s.Header.Sized {
			t.Errorf("%.20q streamed: header %+v is sized", req.Input, s.Header)
		}
	}
}

// TestWholeKnownOnlyWhenFramed: only a WAV framed by its Content-Length
// has its length and end known before the audio; a chunked WAV (whose
// trailer could still change its end) and raw PCM do not.
func TestWholeKnownOnlyWhenFramed(t *testing.T) {
	wav := string(native.WAVHeader(4)) + "abcd"
	for name, c := range map[string]struct {
		reply, format string
		want          int64
		ok            bool
	}{
		"wav":         {"HTTP/1.1 200 OK\r\nContent-Length: 48\r\nX-Finish-Reason: stop\r\n\r\n" + wav, native.FormatWAV, 4, true},
		"chunked wav": {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n30\r\n" + wav + "\r\n0\r\n\r\n", native.FormatWAV, 0, false},
		"pcm":         {"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd", native.FormatPCM, 0, false},
	} {
		st, err := native.NewClient(cannedServer(t, c.reply)).Open(context.Background(), &native.SpeechRequest{Input: "x", ResponseFormat: c.format})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n, ok := st.Whole(); n != c.want || ok != c.ok {
			t.Errorf("%s: Whole() = %d, %v; want %d, %v", name, n, ok, c.want, c.ok)
		}
		st.Close()
	}
}
