package httpapi

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine/enginetest"
)

// fakeFFmpeg writes a stand-in for ffmpeg that checks its arguments and
// prefixes the PCM it reads with a marker, so the plumbing is tested without
// an encoder.
func fakeFFmpeg(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ffmpeg")
	script := `#!/bin/sh
case "$*" in *"-f s16le -ar 44100 -ac 1 -i pipe:0"*"pipe:1") ;; *) echo "bad args: $*" >&2; exit 2 ;; esac
printf 'ENCODED:'
exec cat
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEncodedFormatsThroughFFmpeg(t *testing.T) {
	ff := fakeFFmpeg(t)
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.FFmpeg = ff })
	pcm := rawPost(t, ts.URL, `{"input":"Encode me.","response_format":"pcm","stream":false}`)
	for format, ct := range map[string]string{"mp3": "audio/mpeg", "opus": "audio/opus", "flac": "audio/flac", "aac": "audio/aac"} {
		r := rawPost(t, ts.URL, `{"input":"Encode me.","response_format":"`+format+`"}`)
		if r.Status != 200 || r.Header.Get("Content-Type") != ct || !r.Terminated || r.Trailer.Get("X-Finish-Reason") != "stop" {
			t.Fatalf("%s: status %d, headers %v, trailer %v", format, r.Status, r.Header, r.Trailer)
		}
		if !strings.HasPrefix(string(r.Body), "ENCODED:") || string(r.Body[len("ENCODED:"):]) != string(pcm.Body) {
			t.Fatalf("%s: the encoder did not get the PCM", format)
		}
	}
}

func TestEncoderFailureIsAnError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ffmpeg")
	os.WriteFile(p, []byte("#!/bin/sh\necho 'Unknown encoder libmp3lame' >&2\nexit 1\n"), 0o755)
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.FFmpeg = p })
	resp := post(t, ts.URL, `{"input":"Encode me.","response_format":"mp3"}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(body), "libmp3lame") || !strings.Contains(string(body), "encoder_failed") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
