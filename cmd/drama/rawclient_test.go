package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
)

// rawReply is a reply read off the socket as it arrived.
type rawReply struct {
	status  int
	header  http.Header
	body    []byte
	chunked bool
	readErr error // the body's read failed: it was cut short
}

// rawSpeech writes a speech request by hand (HTTP/1.0 or 1.1) and reads the
// reply without an HTTP client's help.
func rawSpeech(t *testing.T, url, proto string, body []byte) rawReply {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "POST /v1/audio/speech %s\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", proto, strings.TrimPrefix(url, "http://"), len(body))
	conn.Write(body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: no reply: %v", proto, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return rawReply{status: resp.StatusCode, header: resp.Header, body: data, chunked: len(resp.TransferEncoding) > 0, readErr: err}
}

// TestServeRawClients sends what raw HTTP clients send to drama serve on the
// stand-in: HTTP/1.0 requests whose synthesis fails or whose engine dies
// after the first chunk, and bodies that a lenient JSON decoder would
// change. A client never gets a failed synthesis as complete: a whole WAV
// or PCM reply, sent as the engine's audio arrives, ends short of its
// Content-Length; an SSE body, collected, is a 500. It never gets the
// engine's output or local paths, and gets a 400 naming the field.
func TestServeRawClients(t *testing.T) {
	s := startServe(t)
	waitReady := func() {
		if !enginetest.Within(20*time.Second, func() bool {
			r, err := http.Get(s.url + "/ready")
			if err != nil {
				return false
			}
			r.Body.Close()
			return r.StatusCode == 200
		}) {
			t.Fatalf("not ready again in 20 s\n%s", s.stderr)
		}
	}
	long := strings.Repeat("a sentence that keeps going ", 8)
	for _, marker := range []string{"[standin:fail]", "[standin:crash]"} {
		for _, extra := range []string{``, `,"stream":true`, `,"response_format":"pcm"`, `,"stream_format":"sse"`} {
			waitReady()
			r := rawSpeech(t, s.url, "HTTP/1.0", []byte(`{"input":"`+long+marker+long+`"`+extra+`}`))
			id := r.header.Get("X-Request-Id")
			var e struct {
				Error struct{ Message, Code string }
			}
			switch {
			case extra != `,"stream_format":"sse"` && r.status == 200:
				if r.readErr == nil || r.header.Get("Content-Length") == "" || bytes.Contains(r.body, []byte("standin")) {
					t.Fatalf("HTTP/1.0 %s%s: a 200 of %d bytes (Content-Length %s) read without an error: want it cut short", marker, extra, len(r.body), r.header.Get("Content-Length"))
				}
			case r.status != 500 || json.Unmarshal(r.body, &e) != nil || e.Error.Code != "engine_failed":
				t.Fatalf("HTTP/1.0 %s%s: status %d, %.200q: want 500 engine_failed", marker, extra, r.status, r.body)
			case !strings.Contains(e.Error.Message, id) || strings.Contains(e.Error.Message, "standin") || strings.Contains(e.Error.Message, "/"):
				t.Fatalf("%s: the message must name request %s and hold no engine output or path: %q", marker, id, e.Error.Message)
			}
			if !logged(s, id) {
				t.Fatalf("drama serve's log lacks request %s\n%s", id, s.stderr)
			}
		}
	}
	if !logged(s, "simulated crash") {
		t.Fatalf("the log lacks the engine's output\n%s", s.stderr)
	}
	waitReady()
	for body, param := range map[string]string{
		`{"input":"a","max_frames":4294967299}`: "max_frames",
		`{"input":"a","max_frames":2147483648}`: "max_frames",
		"{\"input\":\"caf\xe9\"}":               "input",
		`{"input":"a\u0000"}`:                   "input",
		`{"input":"a\udc00"}`:                   "input",
		`{"input":"a","input":"b"}`:             "input",
		`{"input":"a"}{"input":"b"}`:            "",
	} {
		r := rawSpeech(t, s.url, "HTTP/1.1", []byte(body))
		var e struct{ Error struct{ Param *string } }
		json.Unmarshal(r.body, &e)
		got := ""
		if e.Error.Param != nil {
			got = *e.Error.Param
		}
		if r.status != 400 || got != param {
			t.Errorf("%q: status %d param %q, want 400 naming %q: %s", body, r.status, got, param, r.body)
		}
	}
}

// logged waits up to 2 s for text to reach drama serve's captured output
// (it is copied from a pipe).
func logged(s *server, text string) bool {
	return enginetest.Within(2*time.Second, func() bool { return strings.Contains(s.stderr.String(), text) })
}
