package servecmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/httpapi/httpapitest"
	"github.com/drama-tts/drama/engine/serve"
	"github.com/drama-tts/drama/internal/safetext"
)

// logSample sends what a start of drama serve logs through newLogs: lines of
// drama, the plugin's hclog lines (one of them a lifecycle event the start
// stream also delivers), the events themselves (one twice) and a request.
func logSample(t *testing.T, tty, jsonFlag, quiet bool, logFile string) string {
	t.Helper()
	ios, _, _, errOut := cmdtest.IOStreams()
	ios.SetStderrTTY(tty)
	f := cmdtest.Factory(ios)
	f.Global.JSON, f.Global.Quiet = jsonFlag, quiet
	l, err := newLogs(f, logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.logger.Warn("no tokenizer.json in the model directory", "dir", "/r/full")
	l.logger.Info("listening", "addr", "http://127.0.0.1:8793")
	h := l.hclog()
	h.Named("cuda").Info("loading 50%", "phase", "loading", "pid", 7) // also an event: left out
	h.Named("engine").Info("SIGTERM: stopping the engine")
	p := serve.NewStartLog(l.from(sourceEngine))
	p.Event(engine.LifecycleEvent{Phase: engine.PhaseLoading, Progress: 0.5, PID: 7, Message: "loading 50%"})
	p.Event(engine.LifecycleEvent{Phase: engine.PhaseLoading, Progress: 0.5, PID: 7, Message: "loading 50%"})
	p.Event(engine.LifecycleEvent{Phase: engine.PhaseExited, Progress: -1, Message: "exited before ready"}) // the start's error says it
	p.Ready()
	p.Event(engine.LifecycleEvent{Phase: engine.PhaseExited, Progress: -1, ExitCode: 70, Message: "engine exited with code 70"})
	srv := httptest.NewServer(httpapi.AccessLog(l.from(sourceAccess), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req_1")
		w.Header().Set("X-Sample-Rate", "44100")
		w.Write(make([]byte, 44+88200))
	})))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"Hi.","voice":"anna","response_format":"wav"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.Close() // waits for the handler, and so for its access line
	return errOut.String()
}

func TestServeLogOnATerminalIsText(t *testing.T) {
	got := logSample(t, true, false, false, "")
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 6 {
		t.Fatalf("want 6 lines (each event once), got %d:\n%s", len(lines), got)
	}
	for i, want := range []string{
		"drama  warning: no tokenizer.json in the model directory  dir=/r/full",
		"drama  listening  addr=http://127.0.0.1:8793",
		"plugin SIGTERM: stopping the engine  module=engine",
		"engine loading 50%  phase=loading pid=7 progress=50",
		"engine warning: engine exited with code 70  phase=exited exit_code=70",
		"access request  id=req_1 method=POST path=/v1/audio/speech status=200 outcome=complete bytes=88244",
	} {
		if line := lines[i][len("15:04:05 "):]; !strings.HasPrefix(line, want) {
			t.Errorf("line %d: %q\nwant it to begin %q", i, line, want)
		}
		if strings.HasPrefix(lines[i], "{") || strings.Contains(lines[i], "per mille") || strings.Contains(lines[i], "p/s") {
			t.Errorf("line %d is not for people: %q", i, lines[i])
		}
	}
	if !strings.Contains(lines[5], "voice=anna format=wav queue_wait_ms") && !strings.Contains(lines[5], "voice=anna format=wav first_audio_ms=") {
		t.Errorf("access line %q: want voice, format, first audio", lines[5])
	}
	if !strings.Contains(lines[5], " rtf=") {
		t.Errorf("access line %q: want the real-time factor", lines[5])
	}
}

func checkNDJSON(t *testing.T, got string, n int) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q (%v)\nall:\n%s", line, err, got)
		}
		if m["source"] == nil || m["msg"] == nil {
			t.Errorf("line %q: want source and msg", line)
		}
		recs = append(recs, m)
	}
	if len(recs) != n {
		t.Fatalf("want %d records, got %d:\n%s", n, len(recs), got)
	}
	return recs
}

func TestServeLogPipedIsNDJSON(t *testing.T) {
	recs := checkNDJSON(t, logSample(t, false, false, false, ""), 6)
	acc := recs[5]
	for k, want := range map[string]any{"source": "access", "id": "req_1", "voice": "anna", "format": "wav", "status": 200.0, "outcome": "complete", "bytes": 88244.0} {
		if acc[k] != want {
			t.Errorf("access %s = %v, want %v", k, acc[k], want)
		}
	}
	if _, ok := acc["first_audio_ms"]; !ok {
		t.Errorf("access record %v: want first_audio_ms", acc)
	}
	if recs[2]["source"] != "plugin" || recs[3]["source"] != "engine" {
		t.Errorf("sources: %v, %v", recs[2], recs[3])
	}
}

func TestServeLogJSONFlagOnATerminalIsNDJSON(t *testing.T) {
	checkNDJSON(t, logSample(t, true, true, false, ""), 6)
}

func TestServeLogQuietPrintsNothingButErrors(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "serve.log")
	if got := logSample(t, false, false, true, logFile); got != "" {
		t.Fatalf("-q printed %q", got)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	checkNDJSON(t, string(bytes.TrimSpace(data)), 6) // the file has every record
}

// discardLogs is a logs that writes nothing.
func discardLogs() *logs {
	l := &logs{base: slog.DiscardHandler}
	l.logger = l.from(sourceDrama)
	return l
}

// TestServeLogEscapesOutsideText plays a client and an engine that put
// terminal escapes and line feeds in what drama serve logs: a request's
// path and voice, a plugin's log line. On a terminal each record stays one
// line with the characters shown escaped; piped, each is one JSON line
// whose decoded values are the text as it came.
func TestServeLogEscapesOutsideText(t *testing.T) {
	const evilVoice = "anna\x1b]0;PWNED\x07\nINJECTED: drama ready"
	const evilPath = "/v1/\x1b[31mred\u009b"
	const evilLine = "engine says \x1b[2J\nINJECTED: all clear \u202etxt.exe"
	for _, tty := range []bool{true, false} {
		ios, _, _, errOut := cmdtest.IOStreams()
		ios.SetStderrTTY(tty)
		l, err := newLogs(cmdtest.Factory(ios), "")
		if err != nil {
			t.Fatal(err)
		}
		l.hclog().Named("engine").Info(evilLine, "detail", evilVoice)
		srv := httptest.NewServer(httpapi.AccessLog(l.from(sourceAccess), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
		body, _ := json.Marshal(map[string]string{"input": "Hi.", "voice": evilVoice})
		resp, err := http.Post(srv.URL+"/v1/audio/speech", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/%1B%5B31mred%C2%9B", nil)
		if resp, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		got := errOut.String()
		lines := strings.Split(strings.TrimSpace(got), "\n")
		if len(lines) != 3 {
			t.Fatalf("tty %v: want 3 lines, one a record, got %d:\n%s", tty, len(lines), got)
		}
		if !tty {
			recs := checkNDJSON(t, got, 3)
			if recs[0]["msg"] != evilLine || recs[1]["voice"] != evilVoice || recs[2]["path"] != evilPath {
				t.Errorf("JSON records do not carry the text as it came: %v", recs)
			}
			continue
		}
		if strings.ContainsFunc(got[:len(got)-1], func(r rune) bool { return r != '\n' && safetext.Escapes(r) }) {
			t.Fatalf("a text log line holds a control character:\n%q", got)
		}
		for i, want := range []string{`engine says \x1b[2J\nINJECTED: all clear \u202etxt.exe`, `voice="anna\x1b]0;PWNED\a\nINJECTED: drama ready"`, `path=/v1/\x1b[31mred\u009b`} {
			if !strings.Contains(lines[i], want) {
				t.Errorf("line %d %q: want it to show %s", i, lines[i], want)
			}
		}
	}
}

// TestAccessLogSaysHowTheReplyEnded: a reply cut short after its 200 went
// out is logged as cut, with the cause as its error code (the engine's
// failure, a client that hung up); a reply sent whole as complete; an
// error reply as an error with its code.
func TestAccessLogSaysHowTheReplyEnded(t *testing.T) {
	failing := enginetest.NewFake()
	failing.FailAfterFirstChunk = true
	slow := enginetest.NewFake()
	slow.FrameDelay = 5 * time.Millisecond
	long := `{"input":"` + strings.Repeat("long text ", 100) + `","response_format":"pcm"}`
	for _, c := range []struct {
		fake    *enginetest.Fake
		body    string
		hangUp  bool
		status  float64
		outcome string
		code    string
	}{
		{enginetest.NewFake(), `{"input":"Whole.","response_format":"pcm"}`, false, 200, "complete", ""},
		{enginetest.NewFake(), `{"input":""}`, false, 400, "error", "invalid_input"},
		{failing, long, false, 200, "cut", "engine_failed"},
		{slow, long, true, 200, "cut", "client_closed"},
	} {
		var buf enginetest.Buffer
		l := &logs{base: slog.NewJSONHandler(&buf, nil)}
		ts := httptest.NewServer(httpapi.AccessLog(l.from(sourceAccess), httpapitest.Fake(t, c.fake, httpapi.Config{}).Handler()))
		conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(c.body), c.body)
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		if c.hangUp {
			io.ReadFull(conn, make([]byte, 4096)) // the headers and the first audio
		} else {
			io.Copy(io.Discard, conn)
		}
		conn.Close()
		ts.Close() // waits for the handler, and so for its access line
		var rec map[string]any
		if err := json.Unmarshal(bytes.TrimSpace([]byte(buf.String())), &rec); err != nil {
			t.Fatalf("%s: not one JSON record: %q", c.code, buf.String())
		}
		if rec["status"] != c.status || rec["outcome"] != c.outcome || (c.code != "" && rec["error"] != c.code) || (c.code == "" && rec["error"] != nil) {
			t.Errorf("status %v outcome %v error %v, want %v %s %q: %s", rec["status"], rec["outcome"], rec["error"], c.status, c.outcome, c.code, buf.String())
		}
	}
}
