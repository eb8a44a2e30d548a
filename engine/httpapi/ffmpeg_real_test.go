package httpapi

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine/enginetest"
)

// realFFmpeg returns the installed ffmpeg, or skips (fails where
// DRAMA_REAL_CLIENTS=require, as in CI).
func realFFmpeg(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		if os.Getenv("DRAMA_REAL_CLIENTS") == "require" {
			t.Fatal("ffmpeg is not on the PATH and DRAMA_REAL_CLIENTS=require forbids skipping: install Debian's ffmpeg")
		}
		t.Skip("ffmpeg not installed")
	}
	return bin
}

// TestRealFFmpegFormats encodes with the real ffmpeg: the default request
// of each encoded format streams (its first bytes reach the client while
// the engine still holds back most of the audio), and "stream": false gives
// a whole file of the same format with Content-Length.
func TestRealFFmpegFormats(t *testing.T) {
	ff := realFFmpeg(t)
	var g *gatedEngine
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) {
		c.FFmpeg = ff
		g = &gatedEngine{Speech: c.Engine, holdAt: 11} // after 10 frames, 0.46 s of audio
		c.Engine = g
	})
	input := strings.Repeat("A paragraph long enough for several seconds of audio. ", 4)
	magic := map[string]func([]byte) bool{
		"mp3": func(b []byte) bool {
			return bytes.HasPrefix(b, []byte("ID3")) || len(b) > 1 && b[0] == 0xFF && b[1]&0xE0 == 0xE0
		},
		"opus": func(b []byte) bool {
			return bytes.HasPrefix(b, []byte("OggS")) && bytes.Contains(b, []byte("OpusHead"))
		},
		"flac": func(b []byte) bool { return bytes.HasPrefix(b, []byte("fLaC")) },
		"aac":  func(b []byte) bool { return len(b) > 1 && b[0] == 0xFF && b[1]&0xF6 == 0xF0 },
	}
	for format, isFormat := range magic {
		t.Run(format, func(t *testing.T) {
			first, early := g.holdUntilFirstBytes()
			r := rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", `{"input":"`+input+`","response_format":"`+format+`"}`,
				func([]byte) { first() })
			if ok, what := early(); !ok {
				t.Fatalf("no encoded audio reached the client while the engine held the rest back: %s", what)
			}
			if r.Status != 200 || !r.Chunked || !r.Terminated || !isFormat(r.Body) || r.Trailer.Get("X-Finish-Reason") != "stop" {
				t.Fatalf("streamed: status %d chunked %v terminated %v, %d bytes starting %q, trailer %v", r.Status, r.Chunked, r.Terminated, len(r.Body), r.Body[:min(8, len(r.Body))], r.Trailer)
			}
			w := rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", `{"input":"`+input+`","response_format":"`+format+`","stream":false}`, nil)
			if w.Status != 200 || w.Chunked || w.Header.Get("Content-Length") != strconv.Itoa(len(w.Body)) || !isFormat(w.Body) || w.Header.Get("X-Finish-Reason") != "stop" {
				t.Fatalf("whole: status %d, headers %v, %d bytes", w.Status, w.Header, len(w.Body))
			}
			if w.Header.Get("Content-Type") != contentType(format) {
				t.Fatalf("Content-Type %q", w.Header.Get("Content-Type"))
			}
		})
	}
}
