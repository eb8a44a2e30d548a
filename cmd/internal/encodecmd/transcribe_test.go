package encodecmd

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

func TestEncodeTranscribesAClipWithoutItsWords(t *testing.T) {
	s := transcribetest.New()
	defer s.Close()
	s.Text = transcribetest.Trim(sentence)
	e := newEnv(t)
	e.opts.Clips = []string{shortClip(t)}
	e.opts.TranscribeURL = s.URL
	e.opts.Output = filepath.Join(t.TempDir(), "anna.json")
	if err := validate(e.opts); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	v, err := voices.ReadFile(e.opts.Output, nil)
	if err != nil || v.References[0].Text != sentence {
		t.Fatalf("%v %+v", err, v)
	}
	if !strings.Contains(e.err.String(), "transcribed "+shortClip(t)+": \""+sentence+"\"") {
		t.Fatalf("the words heard are not shown: %q", e.err.String())
	}
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d transcriptions", n)
	}

	// a clip with its words is not sent
	e = newEnv(t)
	e.opts.Clips = []string{shortClip(t) + ":" + sentence}
	e.opts.TranscribeURL = s.URL
	e.opts.Output = filepath.Join(t.TempDir(), "anna.json")
	validate(e.opts)
	if err := run(context.Background(), e.opts); err != nil || len(s.Requests()) != 1 {
		t.Fatalf("%v, %d transcriptions", err, len(s.Requests()))
	}

	// the server fails: the error says where and why, and nothing is encoded
	s.Text = func(string, []byte) (string, int) { return "", http.StatusServiceUnavailable }
	e = newEnv(t)
	e.opts.Clips = []string{shortClip(t)}
	e.opts.TranscribeURL = s.URL
	validate(e.opts)
	err = run(context.Background(), e.opts)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), s.URL) || e.eng.Calls != 0 {
		t.Fatalf("want the server's 503, got %v", err)
	}

	e = newEnv(t)
	e.opts.TranscribeURL = "127.0.0.1:9"
	e.opts.Clips = []string{shortClip(t)}
	if err := validate(e.opts); cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "--transcribe-url") {
		t.Fatalf("a URL without a scheme: %v", err)
	}
}
