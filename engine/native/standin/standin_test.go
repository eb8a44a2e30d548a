package standin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
)

// TestMain runs the stand-in binary's Main when the test binary is
// started as one (see runServe).
func TestMain(m *testing.M) {
	if os.Getenv("STANDIN_TEST_MAIN") == "1" {
		os.Exit(Main(os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadVoices(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.json", `{"format":"drama3-voice/1","id":"amy","name":"Amy","references":[{}]}`)
	writeFile(t, dir, "notes.txt", "ignored")
	vs, err := LoadVoices(dir, false)
	if err != nil || len(vs) != 1 || vs["amy"].Name != "Amy" || vs["amy"].Key == "" {
		t.Fatalf("%+v %v", vs, err)
	}
	if _, err := LoadVoices(dir, true); err == nil || !strings.Contains(err.Error(), "want \"drama3-http-voice/1\"") {
		t.Errorf("metal reading a CUDA voice: %v", err)
	}
	for name, body := range map[string]string{
		"bad id":   `{"format":"drama3-voice/1","id":"Amy!","references":[{}]}`,
		"no refs":  `{"format":"drama3-voice/1","id":"bob","references":[]}`,
		"not json": `{`,
		"dup":      `{"format":"drama3-voice/1","id":"amy","references":[{}]}`,
	} {
		d := t.TempDir()
		writeFile(t, d, "a.json", `{"format":"drama3-voice/1","id":"amy","references":[{}]}`)
		writeFile(t, d, "b.json", body)
		if _, err := LoadVoices(d, false); err == nil || !strings.Contains(err.Error(), "b.json") {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
	if _, err := LoadVoices(filepath.Join(dir, "missing"), false); err == nil {
		t.Error("missing dir: want an error")
	}
}

func TestNewServerRefuses(t *testing.T) {
	if _, err := NewServer(Options{Metal: true, LongForm: true}); err == nil {
		t.Error("metal with long form: want an error")
	}
	if _, err := NewServer(Options{Metal: true, MaxFrames: 9000}); err == nil {
		t.Error("metal over 8190 frames: want an error")
	}
	if _, err := NewServer(Options{DefaultVoice: "x"}); err == nil {
		t.Error("unknown default voice: want an error")
	}
}

func post(t *testing.T, s *Server, body string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("POST", native.SpeechPath, strings.NewReader(body)))
	return w
}

func TestServerRoutesAndRefusals(t *testing.T) {
	s, _ := NewServer(Options{Metal: true})
	refs := `[{"text":"a","vq_codes":[[1],[1],[1],[1],[1],[1],[1],[1],[1],[1]]}]`
	for body, want := range map[string]string{
		`{"input":"hi","references":` + refs + `}`: "references",
		`{"input":"hi","long_form":true}`:          "long_form",
		`{"input":"hi","preset":"x"}`:              "preset",
		`{"input":"hi","instructions":"<b>"}`:      "instructions",
		`{"input":"hi","unknown":1}`:               "unknown field",
		`{"input":"hi","max_frames":8191}`:         "max_frames",
	} {
		w := post(t, s, body)
		if w.Code != 400 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d %s, want 400 about %s", body, w.Code, w.Body, want)
		}
	}
	if w := post(t, s, `{"input":"hi","instructions":"softly"}`); w.Code != 200 || w.Header().Get(native.HeaderFinishReason) != "stop" {
		t.Errorf("instructions: %d %v", w.Code, w.Header())
	}
	for _, tc := range []struct{ method, path string }{{"GET", "/nope"}, {"GET", native.SpeechPath}} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		if w.Code != 404 && w.Code != 405 {
			t.Errorf("%s %s: %d", tc.method, tc.path, w.Code)
		}
	}
	if st := s.Stats(); st.Invalid != 6 || st.Completed != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestInstructionsChangeAudio(t *testing.T) {
	s, _ := NewServer(Options{})
	a := post(t, s, `{"input":"hi"}`).Body.Bytes()
	b := post(t, s, `{"input":"hi","instructions":"whispering"}`).Body.Bytes()
	if bytes.Equal(a, b) {
		t.Error("instructions did not change the audio")
	}
}

func TestMainUsage(t *testing.T) {
	var stderr bytes.Buffer
	for _, args := range [][]string{
		nil, {"dance"}, {"serve", "--parallel", "2"}, {"serve", "extra"}, {"--serve", "--long-form"},
		{"voice", "encode", "--codec", "c"}, {"--encode", "o", "--codec", "c"},
	} {
		if code := Main(args, &stderr); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, ExitUsage)
		}
	}
	dir := t.TempDir()
	clip := filepath.Join(dir, "c.wav")
	os.WriteFile(clip, append(native.WAVHeader(4), 1, 2, 3, 4), 0o644)
	out := filepath.Join(dir, "codes.json")
	if code := Main([]string{"voice", "encode", "--codec", filepath.Join(dir, "none.pth"), "--audio", clip, "--out", out}, &stderr); code != ExitFailure {
		t.Errorf("missing codec: exit %d", code)
	}
	if code := Main([]string{"--codec", clip, "--ref-audio", clip, "--encode", out}, &stderr); code != ExitOK {
		t.Errorf("metal encode: exit %d: %s", code, stderr.String())
	}
	if codes, err := native.ReadCodes(out); err != nil || len(codes[0]) != 1 {
		t.Errorf("codes: %v %v", codes, err)
	}
}

// FuzzSpeechRequest posts arbitrary bodies: never a panic, only 200 or 400.
func FuzzSpeechRequest(f *testing.F) {
	for _, s := range []string{`{"input":"hi"}`, `{"input":"hi","stream":true,"response_format":"pcm","max_frames":3}`,
		`{"input":"","voice":"x"}`, `{"input":"a [standin:silence]","max_frames":30}`} {
		f.Add(s)
	}
	s, _ := NewServer(Options{MaxFrames: 64})
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(body, "standin:") {
			return // fault markers end replies on purpose
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("POST", native.SpeechPath, strings.NewReader(body)))
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("status %d for %q", w.Code, body)
		}
		if w.Code == http.StatusBadRequest {
			var v map[string]string
			if json.Unmarshal(w.Body.Bytes(), &v) != nil || v["error"] == "" {
				t.Fatalf("400 without an error message: %s", w.Body)
			}
		}
	})
}

// FuzzEncodeClip: any bytes either encode into valid codes or give ErrClip.
func FuzzEncodeClip(f *testing.F) {
	f.Add(append(native.WAVHeader(4), 1, 2, 3, 4))
	f.Add(native.WAVHeader(0))
	f.Add([]byte("RIFF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		codes, err := EncodeClip(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrClip) {
				t.Fatalf("error %v is not ErrClip", err)
			}
			return
		}
		ref := native.Reference{Text: "x", VQCodes: codes}
		if err := ref.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestHoldMiB: --hold-mib (or TENSORFOLD_STANDIN_HOLD_MIB) is the memory
// held once loaded, every page of it written; a negative amount is
// refused.
func TestHoldMiB(t *testing.T) {
	t.Setenv(EnvHoldMiB, "3")
	o, err := parseServe(nil, false, io.Discard)
	if err != nil || o.holdMiB != 3 {
		t.Fatalf("from the environment: %+v %v", o, err)
	}
	if o, err := parseServe([]string{"--hold-mib", "5"}, false, io.Discard); err != nil || o.holdMiB != 5 {
		t.Fatalf("the flag: %+v %v", o, err)
	}
	if _, err := parseServe([]string{"--hold-mib", "-1"}, false, io.Discard); err == nil || !strings.Contains(err.Error(), EnvHoldMiB) {
		t.Fatalf("a negative amount: %v", err)
	}
	b := hold(3)
	if len(b) != 3<<20 {
		t.Fatalf("held %d bytes", len(b))
	}
	for i := 0; i < len(b); i += 4096 {
		if b[i] != 1 {
			t.Fatalf("page at %d not touched", i)
		}
	}
}

// TestFaultFile: the fault file's content, read at each start, overrides
// TENSORFOLD_STANDIN_FAULT; absent or empty it leaves it alone.
func TestFaultFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fault")
	t.Setenv(EnvFault, "ignore-sigterm")
	t.Setenv(EnvFaultFile, file)
	parse := func() string {
		o, err := parseServe([]string{"--port", "0"}, false, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return o.fault
	}
	if f := parse(); f != "ignore-sigterm" {
		t.Fatalf("no fault file: fault %q, want the environment's", f)
	}
	os.WriteFile(file, []byte("crash-on-start\n"), 0o644)
	if f := parse(); f != "crash-on-start" {
		t.Fatalf("fault file: fault %q, want crash-on-start", f)
	}
	os.WriteFile(file, nil, 0o644)
	if f := parse(); f != "ignore-sigterm" {
		t.Fatalf("empty fault file: fault %q, want the environment's", f)
	}
}

// TestPrefixCacheLRU: the last two voices spoken are warm; a third evicts
// the least recently used one, and only cold voices wait the prefill.
func TestPrefixCacheLRU(t *testing.T) {
	var lines []string
	s, err := NewServer(Options{Prefill: time.Millisecond, Voices: map[string]Voice{"a": {Key: "a"}, "b": {Key: "b"}, "c": {Key: "c"}},
		Logf: func(f string, args ...any) { lines = append(lines, fmt.Sprintf(f, args...)) }})
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		voice string
		cold  bool
	}{{"a", true}, {"b", true}, {"a", false}, {"b", false}, {"c", true}, {"a", true}, {"c", false}, {"b", true}} {
		before := s.Stats().Prefills
		if w := post(t, s, `{"input":"hi","voice":"`+step.voice+`"}`); w.Code != 200 {
			t.Fatalf("step %d: %d %s", i, w.Code, w.Body)
		}
		if cold := s.Stats().Prefills > before; cold != step.cold {
			t.Errorf("step %d, voice %s: cold %v, want %v", i, step.voice, cold, step.cold)
		}
	}
	if len(lines) != 5 || !strings.Contains(lines[0], "prefill: voice a is not in the prefix cache (1ms)") {
		t.Errorf("prefill lines %q", lines)
	}
	// references are a voice of their own
	refs := `[{"text":"a","vq_codes":[[1],[1],[1],[1],[1],[1],[1],[1],[1],[1]]}]`
	before := s.Stats().Prefills
	post(t, s, `{"input":"hi","voice":"c","references":`+refs+`}`)
	if s.Stats().Prefills != before+1 {
		t.Error("a voice with references was taken for the voice alone")
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "prefill: voice c with 1 reference is not in the prefix cache") {
		t.Errorf("prefill line of a voice with references: %q", last)
	}
	// no cache: every synthesis prefills; a request naming no voice is the
	// model's own
	lines = nil
	off, _ := NewServer(Options{PrefixCache: -1, Logf: func(f string, args ...any) { lines = append(lines, fmt.Sprintf(f, args...)) }})
	post(t, off, `{"input":"hi"}`)
	post(t, off, `{"input":"hi"}`)
	if n := off.Stats().Prefills; n != 2 {
		t.Errorf("prefix cache off: %d prefills, want 2", n)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "prefill: the built-in voice is not in the prefix cache") {
		t.Errorf("prefill lines of the built-in voice %q", lines)
	}
}

// TestPrefillDelaysFirstAudio: a cold voice's audio waits the prefill, a
// warm one's does not; a client that leaves during the prefill cancels.
func TestPrefillDelaysFirstAudio(t *testing.T) {
	s, _ := NewServer(Options{Prefill: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeHTTP(w, httptest.NewRequest("POST", native.SpeechPath, strings.NewReader(`{"input":"hi","stream":true,"response_format":"pcm"}`)).WithContext(ctx))
	}()
	enginetest.WaitFor(t, func() bool { return s.Stats().Prefills > 0 })
	if w.Body.Len() != 0 {
		t.Fatal("audio before the prefill ended")
	}
	cancel()
	<-done
	if st := s.Stats(); st.Cancelled != 1 || st.Completed != 0 {
		t.Errorf("stats %+v, want the prefill cancelled", st)
	}
}

// TestServeLogsDevice: the binary's log names the GPUs it was started
// with and the size of its prefix cache.
func TestServeLogsDevice(t *testing.T) {
	cmd := exec.Command(os.Args[0], "serve", "--port", "0", "--load-time", "1ms")
	cmd.Env = append(os.Environ(), "STANDIN_TEST_MAIN=1", "CUDA_VISIBLE_DEVICES=3", EnvPrefill+"=1ms", "DRAMA_PREFIX_CACHE=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var seen []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "standin: ready") {
		seen = append(seen, sc.Text())
	}
	if !slices.Contains(seen, "standin: device: CUDA_VISIBLE_DEVICES=3") || !slices.Contains(seen, "standin: prefix cache: 1") {
		t.Errorf("log %q: want the device and the prefix cache", seen)
	}
}

func TestDeviceID(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "1")
	if got := deviceID(); got != "CUDA_VISIBLE_DEVICES=1" {
		t.Errorf("deviceID %q", got)
	}
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
	if got := deviceID(); !strings.Contains(got, "unset") {
		t.Errorf("deviceID %q without CUDA_VISIBLE_DEVICES", got)
	}
}

// The speech carries its text, whole and streamed alike, so a
// transcription stand-in can hear it; noise, silence and a speech cut
// before its text was carried carry none.
func TestSpokenText(t *testing.T) {
	s, _ := NewServer(Options{})
	text := `[laughs] Ünïcode "quoted" — and a long tail ` + strings.Repeat("word ", 60)
	body, _ := json.Marshal(map[string]any{"input": text, "response_format": "pcm"})
	pcm := post(t, s, string(body)).Body.Bytes()
	if got, ok := SpokenText(pcm); !ok || got != text {
		t.Fatalf("whole: %q %v", got, ok)
	}
	body, _ = json.Marshal(map[string]any{"input": text, "response_format": "pcm", "stream": true})
	if streamed := post(t, s, string(body)).Body.Bytes(); !bytes.Equal(streamed, pcm) {
		t.Fatal("the stream differs from the whole reply")
	}
	wav := post(t, s, `{"input":"Hi."}`).Body.Bytes()
	r := bytes.NewReader(wav)
	if _, err := native.ReadWAVHeader(r); err != nil {
		t.Fatal(err)
	}
	if got, ok := SpokenText(wav[len(wav)-r.Len():]); !ok || got != "Hi." {
		t.Fatalf("WAV: %q %v", got, ok)
	}
	if _, ok := SpokenText(wav); ok {
		t.Error("a WAV header read as samples carries no text")
	}
	if _, ok := SpokenText(make([]byte, len(pcm))); ok {
		t.Error("silence carries no text")
	}
	if _, ok := SpokenText(pcm[:2*8*(len(payloadMagic)+2+len(text)/2)]); ok {
		t.Error("a speech cut halfway through its text carries it")
	}
	noisy, _ := NewServer(Options{Noise: true})
	body, _ = json.Marshal(map[string]any{"input": text, "response_format": "pcm"})
	noise := post(t, noisy, string(body)).Body.Bytes()
	if len(noise) != len(pcm) || bytes.Equal(noise, pcm) {
		t.Fatalf("noise: %d bytes against %d", len(noise), len(pcm))
	}
	if got, ok := SpokenText(noise); ok {
		t.Errorf("noise carries %q", got)
	}
	if again := post(t, noisy, string(body)).Body.Bytes(); !bytes.Equal(again, noise) {
		t.Error("the noise is not deterministic")
	}
}
