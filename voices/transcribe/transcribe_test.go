package transcribe_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/drama-tts/drama/voices/transcribe"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":                 "http://127.0.0.1:8080/v1/audio/transcriptions",
		"http://127.0.0.1:8080/":                "http://127.0.0.1:8080/v1/audio/transcriptions",
		"http://h:1/v1":                         "http://h:1/v1/audio/transcriptions",
		"https://h/api/v1/audio/transcriptions": "https://h/api/v1/audio/transcriptions",
		"http://h:1/openai/v1/":                 "http://h:1/openai/v1/audio/transcriptions",
	} {
		got, err := transcribe.Endpoint(in)
		if err != nil || got != want {
			t.Errorf("%s: got %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://h/", "http://"} {
		if _, err := transcribe.Endpoint(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestTranscribeAgainstStandin(t *testing.T) {
	s := transcribetest.New()
	defer s.Close()
	s.Text = transcribetest.Trim("Hello there,\nthis is  my voice.")
	c := &transcribe.Client{URL: s.URL, Language: "en"}
	got, err := c.Transcribe(context.Background(), "/tmp/x/take1.wav", strings.NewReader("RIFF fake"))
	if err != nil || got != "Hello there, this is my voice." {
		t.Fatalf("got %q, %v", got, err)
	}
	r := s.Requests()[0]
	if r.Filename != "take1.wav" || r.Model != transcribe.DefaultModel || r.ResponseFormat != "json" || r.Language != "en" {
		t.Fatalf("request: %+v", r)
	}
}

func TestTranscribeFailures(t *testing.T) {
	s := transcribetest.New()
	defer s.Close()
	c := &transcribe.Client{URL: s.URL}
	s.Text = func(string, []byte) (string, int) { return "", http.StatusInternalServerError }
	_, err := c.Transcribe(context.Background(), "a.wav", strings.NewReader("x"))
	var te *transcribe.Error
	if !errors.As(err, &te) || te.Status != 500 || !strings.Contains(err.Error(), "simulated failure") {
		t.Fatalf("a 500: %v", err)
	}
	s.Text = func(string, []byte) (string, int) { return " \n ", 0 }
	if _, err := c.Transcribe(context.Background(), "a.wav", strings.NewReader("x")); !errors.Is(err, transcribe.ErrNoSpeech) {
		t.Fatalf("no words: %v", err)
	}
	url := s.URL
	s.Close()
	_, err = (&transcribe.Client{URL: url}).Transcribe(context.Background(), "a.wav", strings.NewReader("x"))
	if !errors.As(err, &te) || te.Status != 0 || !strings.Contains(err.Error(), "is the transcription server running") {
		t.Fatalf("no server: %v", err)
	}
}

// Garble garbles floor(n*share) of n words, so the word error rate of its
// answer is known exactly; Hear finds the text in a WAV's data chunk and
// drops point tags, and hears no words in audio that carries none.
func TestStandinGarbleAndHear(t *testing.T) {
	ref := "[laughs] One two three, four five six seven eight nine ten."
	for _, c := range []struct {
		share  float64
		errors int
	}{{0, 0}, {0.1, 1}, {0.25, 2}, {0.5, 5}, {1, 10}} {
		heard, fault := transcribetest.Garble(c.share, transcribetest.Trim(ref))("a.wav", nil)
		if got := transcribe.WER(ref, heard); fault != 0 || got.Words != 10 || got.Errors != c.errors {
			t.Errorf("share %g: %q scores %+v, want %d errors in 10 words", c.share, heard, got, c.errors)
		}
	}
	failing := func(string, []byte) (string, int) { return "", http.StatusBadGateway }
	if _, fault := transcribetest.Garble(0.5, failing)("a.wav", nil); fault != http.StatusBadGateway {
		t.Errorf("fault %d passed on", fault)
	}

	wav := func(chunks ...string) []byte {
		b := []byte("RIFF\x00\x00\x00\x00WAVE")
		for _, c := range chunks {
			id, body := c[:4], c[4:]
			b = append(b, id...)
			b = append(b, byte(len(body)), 0, 0, 0)
			b = append(b, body...)
			if len(body)%2 == 1 {
				b = append(b, 0)
			}
		}
		return b
	}
	spoken := func(pcm []byte) (string, bool) {
		s, ok := strings.CutPrefix(string(pcm), "says:")
		return s, ok
	}
	hear := transcribetest.Hear(spoken)
	for _, c := range []struct {
		name  string
		audio []byte
		want  string
	}{
		{"data after fmt and an odd chunk", wav("fmt 0123456789abcdef", "LIST123", "datasays:[sighs] Hello  there. [laughs]"), "Hello there."},
		{"noise", wav("datanoise"), ""},
		{"not a WAV", []byte("says:Hello"), ""},
		{"a chunk past the end", []byte("RIFF\x00\x00\x00\x00WAVEfmt \xff\x00\x00\x00"), ""},
	} {
		if got, fault := hear("a.wav", c.audio); got != c.want || fault != 0 {
			t.Errorf("%s: heard %q (fault %d), want %q", c.name, got, fault, c.want)
		}
	}
}
