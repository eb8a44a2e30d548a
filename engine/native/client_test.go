package native_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/standin"
)

func startStandin(t *testing.T, opts standin.Options) *standin.Running {
	t.Helper()
	r, err := standin.Listen(opts, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func collect(t *testing.T, c *native.Client, req *native.SpeechRequest) ([]byte, *native.Result, error) {
	t.Helper()
	var out bytes.Buffer
	res, err := c.Synthesize(context.Background(), req, func(p []byte) error {
		if len(p)%2 != 0 || len(p) > native.MaxChunk {
			t.Errorf("chunk of %d bytes: want whole samples, at most %d", len(p), native.MaxChunk)
		}
		out.Write(p)
		return nil
	})
	return out.Bytes(), res, err
}

func TestWholeEqualsStream(t *testing.T) {
	srv := startStandin(t, standin.Options{})
	c := native.NewClient(srv.Addr)
	text := "The same text gives the same audio."
	whole, wres, err := collect(t, c, &native.SpeechRequest{Input: text})
	if err != nil {
		t.Fatal(err)
	}
	streamed, sres, err := collect(t, c, &native.SpeechRequest{Input: text, Stream: true, ResponseFormat: "pcm"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, streamed) {
		t.Fatalf("streamed audio differs from whole: %d vs %d bytes", len(streamed), len(whole))
	}
	if wres.FinishReason != "stop" || sres.FinishReason != "stop" {
		t.Errorf("finish reasons %q, %q: want stop", wres.FinishReason, sres.FinishReason)
	}
	if len(whole) == 0 || len(whole)%(2*native.SamplesPerFrame) != 0 {
		t.Errorf("audio of %d bytes: want whole frames", len(whole))
	}
	if sres.Bytes != int64(len(streamed)) || sres.FirstAudio <= 0 {
		t.Errorf("result %+v: want Bytes %d and a first-audio time", sres, len(streamed))
	}
	again, _, _ := collect(t, c, &native.SpeechRequest{Input: text, ResponseFormat: "pcm"})
	if !bytes.Equal(again, whole) {
		t.Error("whole pcm differs from the WAV's PCM")
	}
	other, _, _ := collect(t, c, &native.SpeechRequest{Input: text + "!"})
	if bytes.Equal(other, whole) {
		t.Error("different text gave the same audio")
	}
}

func TestFinishReasons(t *testing.T) {
	srv := startStandin(t, standin.Options{})
	c := native.NewClient(srv.Addr)
	for _, tc := range []struct {
		name, text string
		max        int
		want       string
	}{
		{"stop", "Hello there.", 0, "stop"},
		{"length", "Hello there, a longer sentence.", 10, "length"},
		{"silence", "Hmm " + standin.MarkerSilence, 0, "silence"},
	} {
		for _, stream := range []bool{false, true} {
			req := &native.SpeechRequest{Input: tc.text, MaxFrames: tc.max, Stream: stream}
			if stream {
				req.ResponseFormat = "pcm"
			}
			pcm, res, err := collect(t, c, req)
			if err != nil {
				t.Fatalf("%s stream=%v: %v", tc.name, stream, err)
			}
			if res.FinishReason != tc.want {
				t.Errorf("%s stream=%v: finish %q, want %q", tc.name, stream, res.FinishReason, tc.want)
			}
			if tc.max > 0 && len(pcm) != tc.max*2*native.SamplesPerFrame {
				t.Errorf("%s: %d bytes, want %d frames", tc.name, len(pcm), tc.max)
			}
		}
	}
}

func TestLongFormSegments(t *testing.T) {
	srv := startStandin(t, standin.Options{LongForm: true, MaxFrames: 8000})
	c := native.NewClient(srv.Addr)
	text := strings.Repeat("This is one sentence of a long text. ", 30)
	for _, stream := range []bool{false, true} {
		req := &native.SpeechRequest{Input: text, Stream: stream}
		if stream {
			req.ResponseFormat = "pcm"
		}
		_, res, err := collect(t, c, req)
		if err != nil {
			t.Fatal(err)
		}
		n, starts, err := native.ParseLongFormSegments(res.LongFormSegments)
		if err != nil || n < 3 || len(starts) != n-1 {
			t.Errorf("stream=%v: segments %q: n=%d starts=%v err=%v", stream, res.LongFormSegments, n, starts, err)
		}
	}
}

func TestInvalidInServersWords(t *testing.T) {
	srv := startStandin(t, standin.Options{})
	c := native.NewClient(srv.Addr)
	speed := 2.0
	for _, req := range []*native.SpeechRequest{
		{Input: "hi", Speed: &speed},
		{Input: "hi", Voice: "nobody"},
		{Input: "hi", Instructions: "[loud]"},
		{Input: ""},
		{Input: "hi", Stream: true},
		{Input: "hi", MaxFrames: 5000},
	} {
		_, err := c.Synthesize(context.Background(), req, func([]byte) error { return nil })
		var se *native.StatusError
		if !errors.Is(err, native.ErrInvalid) || !errors.As(err, &se) || se.Code != 400 {
			t.Errorf("%+v: err %v, want a 400 ErrInvalid", req, err)
			continue
		}
		if strings.Contains(se.Message, "{") || se.Message == "" {
			t.Errorf("message %q: want the server's words without JSON", se.Message)
		}
	}
}

func TestBusyRetriedThenServed(t *testing.T) {
	srv := startStandin(t, standin.Options{RTF: 0.05})
	c := native.NewClient(srv.Addr)
	ctx := context.Background()
	first, err := c.Open(ctx, &native.SpeechRequest{Input: strings.Repeat("long text ", 20), Stream: true, ResponseFormat: "pcm"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer first.Close()
		for {
			if _, err := first.Next(); err != nil {
				done <- err
				return
			}
		}
	}()
	_, res, err := collect(t, c, &native.SpeechRequest{Input: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if res.BusyRetries == 0 {
		t.Error("second request: want busy retries while the first ran")
	}
	if err := <-done; !errors.Is(err, io.EOF) {
		t.Errorf("first: %v", err)
	}
}

func TestBusyTimeout(t *testing.T) {
	srv := startStandin(t, standin.Options{RTF: 1})
	c := &native.Client{Addr: srv.Addr, BusyRetry: 10 * time.Millisecond, BusyTimeout: 100 * time.Millisecond}
	first, err := c.Open(context.Background(), &native.SpeechRequest{Input: strings.Repeat("long text ", 20), Stream: true, ResponseFormat: "pcm"})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	_, err = c.Synthesize(context.Background(), &native.SpeechRequest{Input: "second"}, func([]byte) error { return nil })
	if !errors.Is(err, native.ErrBusy) {
		t.Fatalf("err %v: want ErrBusy", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := startStandin(t, standin.Options{RTF: 0.2, BusyAfterCancel: 150 * time.Millisecond})
	c := native.NewClient(srv.Addr)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := c.Synthesize(ctx, &native.SpeechRequest{Input: strings.Repeat("words ", 40), Stream: true, ResponseFormat: "pcm"}, func([]byte) error {
		if n++; n == 1 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v: want context.Canceled", err)
	}
	_, res, err := collect(t, c, &native.SpeechRequest{Input: "next"})
	if err != nil {
		t.Fatalf("next request after a cancel: %v", err)
	}
	if st := srv.Stats(); st.Cancelled != 1 {
		t.Errorf("stats %+v: want one cancelled synthesis", st)
	}
	t.Logf("busy retries after the cancel: %d", res.BusyRetries)
}

func TestFailAfterFirstChunk(t *testing.T) {
	srv := startStandin(t, standin.Options{})
	c := native.NewClient(srv.Addr)
	for _, stream := range []bool{true, false} {
		req := &native.SpeechRequest{Input: "break " + standin.MarkerFail, Stream: stream}
		if stream {
			req.ResponseFormat = "pcm"
		}
		pcm, _, err := collect(t, c, req)
		if !errors.Is(err, native.ErrTruncated) {
			t.Errorf("stream=%v: err %v, want ErrTruncated", stream, err)
		}
		if len(pcm) == 0 {
			t.Errorf("stream=%v: want the first chunk before the failure", stream)
		}
	}
	if _, _, err := collect(t, c, &native.SpeechRequest{Input: "fine"}); err != nil {
		t.Errorf("after a failure: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := native.NewClient(addr)
	if err := c.Health(context.Background()); !errors.Is(err, native.ErrUnreachable) {
		t.Errorf("health: %v, want ErrUnreachable", err)
	}
	_, err = c.Synthesize(context.Background(), &native.SpeechRequest{Input: "x"}, func([]byte) error { return nil })
	if !errors.Is(err, native.ErrUnreachable) {
		t.Errorf("synthesize: %v, want ErrUnreachable", err)
	}
}

func TestHealthLoading(t *testing.T) {
	srv := startStandin(t, standin.Options{})
	c := native.NewClient(srv.Addr)
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.SetReady(false)
	if err := c.Health(context.Background()); !errors.Is(err, native.ErrBusy) {
		t.Errorf("loading: %v, want a 503", err)
	}
}
