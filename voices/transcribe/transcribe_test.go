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
