package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine/enginetest"
)

const streamText = "Hello there, this reply is streamed as it is made."

// TestDefaultRequestStreamsEveryFormat sends the body an OpenAI SDK sends
// (no stream field) and holds the engine after its first chunk: the first
// audio must reach the client while the engine is held, chunked, and the
// reply must end with its terminating chunk and the finish reason trailer.
func TestDefaultRequestStreamsEveryFormat(t *testing.T) {
	ff := fakeFFmpeg(t)
	var g *gatedEngine
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) {
		c.FFmpeg = ff
		g = &gatedEngine{Speech: c.Engine}
		c.Engine = g
	})
	whole := rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", `{"input":"`+streamText+`","voice":"alice","response_format":"pcm","stream":false}`, nil)
	if g.lastStreamed() || whole.Chunked {
		t.Fatalf(`"stream": false: the engine was asked to stream (%v) or the reply was chunked (%v)`, g.lastStreamed(), whole.Chunked)
	}
	for _, format := range []string{"wav", "pcm", "mp3", "opus", "flac", "aac"} {
		t.Run(format, func(t *testing.T) {
			first, early := g.holdUntilFirstBytes()
			r := rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech",
				`{"model":"tts-1","input":"`+streamText+`","voice":"alice","response_format":"`+format+`"}`,
				func([]byte) { first() })
			if ok, what := early(); !ok {
				t.Fatalf("no audio reached the client while the engine was still making the rest (%s): the default request must stream", what)
			}
			if r.Status != 200 || !r.Chunked || !r.Terminated || r.Trailer.Get("X-Finish-Reason") != "stop" {
				t.Fatalf("status %d chunked %v terminated %v trailer %v", r.Status, r.Chunked, r.Terminated, r.Trailer)
			}
			if !g.lastStreamed() {
				t.Fatal("the engine was not asked to stream")
			}
			if r.Header.Get("Content-Type") != contentType(format) || r.Header.Get("Content-Length") != "" {
				t.Fatalf("headers %v", r.Header)
			}
			switch format {
			case "wav":
				if binary.LittleEndian.Uint32(r.Body[4:]) != 0xFFFFFFFF || binary.LittleEndian.Uint32(r.Body[40:]) != 0xFFFFFFFF || !bytes.Equal(r.Body[44:], whole.Body) {
					t.Fatal("a streamed WAV carries 0xFFFFFFFF sizes, then the same PCM as a whole reply")
				}
			case "pcm":
				if !bytes.Equal(r.Body, whole.Body) {
					t.Fatalf("streamed PCM (%d bytes) differs from whole (%d)", len(r.Body), len(whole.Body))
				}
			default:
				if string(r.Body) != "ENCODED:"+string(whole.Body) {
					t.Fatal("the encoder did not get the PCM")
				}
			}
		})
	}
}

// TestWholeRepliesForStreamFalseAndHTTP10 checks that "stream": false, and
// every request over HTTP/1.0 (which has no chunked bodies), get one exactly
// sized reply with the finish reason as a header.
func TestWholeRepliesForStreamFalseAndHTTP10(t *testing.T) {
	ff := fakeFFmpeg(t)
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.FFmpeg = ff })
	pcm := rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", `{"input":"`+streamText+`","response_format":"pcm","stream":false}`, nil)
	cases := []struct{ proto, extra string }{
		{"HTTP/1.1", `,"stream":false`}, {"HTTP/1.0", ``}, {"HTTP/1.0", `,"stream":true`}, {"HTTP/1.0", `,"stream":false`},
	}
	for _, c := range cases {
		for _, format := range []string{"wav", "pcm", "mp3"} {
			name := c.proto + format + c.extra
			r := rawDo(t, ts.URL, c.proto, "POST", "/v1/audio/speech", `{"input":"`+streamText+`","response_format":"`+format+`"`+c.extra+`}`, nil)
			if r.Status != 200 || r.Chunked || r.Header.Get("Content-Length") != strconv.Itoa(len(r.Body)) || r.Header.Get("X-Finish-Reason") != "stop" {
				t.Fatalf("%s: status %d chunked %v, headers %v: want a whole reply with Content-Length and X-Finish-Reason", name, r.Status, r.Chunked, r.Header)
			}
			want := pcm.Body
			switch format {
			case "wav":
				if int(binary.LittleEndian.Uint32(r.Body[40:])) != len(r.Body)-44 || int(binary.LittleEndian.Uint32(r.Body[4:])) != len(r.Body)-8 {
					t.Fatalf("%s: WAV sizes are not exact", name)
				}
				want = append(wavHeader(int64(len(pcm.Body))), pcm.Body...)
			case "mp3":
				want = append([]byte("ENCODED:"), pcm.Body...)
			}
			if !bytes.Equal(r.Body, want) {
				t.Fatalf("%s: %d bytes, want %d", name, len(r.Body), len(want))
			}
		}
	}
	sse := rawDo(t, ts.URL, "HTTP/1.0", "POST", "/v1/audio/speech", `{"input":"`+streamText+`","response_format":"pcm","stream_format":"sse"}`, nil)
	if sse.Status != 200 || sse.Header.Get("Content-Length") != strconv.Itoa(len(sse.Body)) || !strings.Contains(string(sse.Body), `"speech.audio.done"`) {
		t.Fatalf("SSE over HTTP/1.0: status %d, headers %v", sse.Status, sse.Header)
	}
}

// TestFailedSynthesisNeverLooksComplete fails every synthesis after its
// first chunk. Over HTTP/1.0 the reply is an error status; over HTTP/1.1 a
// streamed reply (the default request included) ends without its
// terminating chunk, and an SSE stream carries an error event and no done
// event.
func TestFailedSynthesisNeverLooksComplete(t *testing.T) {
	ff := fakeFFmpeg(t)
	ts, _, _, _ := startFake(t, func(f *enginetest.Fake, c *served) { f.FailAfterFirstChunk = true; c.FFmpeg = ff })
	long := strings.Repeat("long text ", 60)
	for _, extra := range []string{``, `,"stream":true`, `,"response_format":"pcm"`, `,"response_format":"mp3"`, `,"stream_format":"sse"`} {
		body := `{"input":"` + long + `"` + extra + `}`
		r := rawDo(t, ts.URL, "HTTP/1.0", "POST", "/v1/audio/speech", body, nil)
		var e struct{ Error struct{ Code string } }
		if r.Status != 500 || json.Unmarshal(r.Body, &e) != nil || e.Error.Code != "engine_failed" {
			t.Fatalf("HTTP/1.0 %s: status %d, body %.200q: a failed synthesis must be an error status", extra, r.Status, r.Body)
		}
		r = rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", body, nil)
		if r.Status != 200 || !r.Chunked || r.Terminated || len(r.Body) == 0 {
			t.Fatalf("HTTP/1.1 %s: status %d chunked %v terminated %v: a stream failing midway must lack its terminating chunk", extra, r.Status, r.Chunked, r.Terminated)
		}
		if strings.Contains(extra, "sse") && (!strings.Contains(string(r.Body), `"type":"error"`) || strings.Contains(string(r.Body), "speech.audio.done")) {
			t.Fatalf("SSE: want an error event and no done event: %.300q", r.Body)
		}
	}
}

// TestJSONErrorsOnEveryRoute checks GET /v1/models/{id} and that unknown
// routes and methods answer OpenAI-style JSON errors.
func TestJSONErrorsOnEveryRoute(t *testing.T) {
	ts, _, _, _ := startFake(t, nil)
	r := rawDo(t, ts.URL, "HTTP/1.1", "GET", "/v1/models/drama-3-test", "", nil)
	var m struct{ ID, Object, OwnedBy string }
	if r.Status != 200 || json.Unmarshal(r.Body, &m) != nil || m.ID != "drama-3-test" || m.Object != "model" {
		t.Fatalf("retrieve the served model: %d %s", r.Status, r.Body)
	}
	for _, c := range []struct {
		method, path string
		status       int
		allow, code  string
	}{
		{"GET", "/v1/models/tts-1", 404, "", "model_not_found"},
		{"GET", "/v1/nothing-here", 404, "", "not_found"},
		{"GET", "/index.php", 404, "", "not_found"},
		{"GET", "/ui/nothing.js", 404, "", "not_found"},
		{"POST", "/", 405, "GET, HEAD", "method_not_allowed"}, // GET / is the page
		{"GET", "/v1/audio/speech", 405, "POST", "method_not_allowed"},
		{"DELETE", "/v1/models", 405, "GET, HEAD", "method_not_allowed"},
		{"PUT", "/v1/voices", 405, "GET, HEAD, POST", "method_not_allowed"},
		{"POST", "/health", 405, "GET, HEAD", "method_not_allowed"},
	} {
		r := rawDo(t, ts.URL, "HTTP/1.1", c.method, c.path, "", nil)
		var e struct {
			Error struct {
				Message, Type string
				Param, Code   *string
			}
		}
		if r.Status != c.status || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(r.Body, &e) != nil ||
			e.Error.Message == "" || e.Error.Type != "invalid_request_error" || e.Error.Code == nil || *e.Error.Code != c.code {
			t.Errorf("%s %s: %d %v %s", c.method, c.path, r.Status, r.Header, r.Body)
			continue
		}
		if got := r.Header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
}

// TestSSEDoneCarriesUsage checks the usage object of speech.audio.done:
// the prompt's tokens in, one token per frame of audio out.
func TestSSEDoneCarriesUsage(t *testing.T) {
	b := dramaBuilder(t, 4000)
	want, err := b.Count(streamText, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Prompt = b })
	r := rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", `{"input":"`+streamText+`","response_format":"pcm","stream_format":"sse"}`, nil)
	var samples int
	var done struct {
		Type  string
		Usage *struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			TotalTokens  int `json:"total_tokens"`
		}
	}
	for _, line := range strings.Split(string(r.Body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct{ Type, Audio string }
		json.Unmarshal([]byte(data), &ev)
		switch ev.Type {
		case "speech.audio.delta":
			pcm, _ := base64.StdEncoding.DecodeString(ev.Audio)
			samples += len(pcm) / 2
		case "speech.audio.done":
			json.Unmarshal([]byte(data), &done)
		}
	}
	frames := samples / 2048
	if done.Usage == nil || done.Usage.InputTokens != want || done.Usage.OutputTokens != frames || done.Usage.TotalTokens != want+frames || frames == 0 {
		t.Fatalf("usage %+v: want input %d, output %d frames, total the sum", done.Usage, want, frames)
	}
}

// TestInputChecksNameTheField sends, byte for byte, bodies that a lenient
// decoder would accept after changing them.
func TestInputChecksNameTheField(t *testing.T) {
	// The CUDA engine states no frame limit; its plugin carries max_frames
	// in 32 bits.
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Caps.MaxFrames = 0 })
	for _, c := range []struct {
		name, body, param, says string
	}{
		{"max_frames over 32 bits", `{"input":"a","max_frames":4294967299}`, "max_frames", "4294967299"},
		{"max_frames over int32", `{"input":"a","max_frames":2147483648}`, "max_frames", "2147483648"},
		{"max_frames not whole", `{"input":"a","max_frames":2.5}`, "max_frames", "2.5"},
		{"max_frames far below 0", `{"input":"a","max_frames":-99999999999999999999}`, "max_frames", "or more"},
		{"max_frames as a string", `{"input":"a","max_frames":"12"}`, "max_frames", "number"},
		{"input a number", `{"input":5}`, "input", "string"},
		{"invalid UTF-8", "{\"input\":\"caf\xe9 au lait\"}", "input", "UTF-8"},
		{"NUL", `{"input":"a\u0000b"}`, "input", "U+0000"},
		{"lone high surrogate", `{"input":"a\ud800b"}`, "input", "surrogate"},
		{"lone low surrogate", `{"input":"a\udc00"}`, "input", "surrogate"},
		{"surrogate in instructions", `{"input":"a","instructions":"x\ud83d"}`, "instructions", "surrogate"},
		{"duplicate key", `{"input":"first","input":"second"}`, "input", "twice"},
		{"duplicate nested key", `{"input":"a","voice":{"id":"alice","id":"narrator"}}`, "voice", "twice"},
		{"second value", `{"input":"a"} {"input":"b"}`, "", "after"},
		{"trailing garbage", `{"input":"a"}x`, "", "after"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", c.body, nil)
			var e struct {
				Error struct {
					Message string
					Param   *string
				}
			}
			json.Unmarshal(r.Body, &e)
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if r.Status != 400 || param != c.param || !strings.Contains(e.Error.Message, c.says) || strings.Contains(e.Error.Message, "-2147483648") {
				t.Fatalf("status %d, param %q (want %q), message %q (want it to say %q)", r.Status, param, c.param, e.Error.Message, c.says)
			}
		})
	}
}

// TestEngineFailureHidesLogTail checks that a client never sees the
// engine's output or local paths: the reply names the request id, and the
// log has the details under that id.
func TestEngineFailureHidesLogTail(t *testing.T) {
	for _, midway := range []bool{false, true} {
		logs := &enginetest.Buffer{}
		ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) {
			c.Engine = &failingEngine{Speech: c.Engine, midway: midway}
			c.Logger = slog.New(slog.NewTextHandler(logs, nil))
		})
		for _, body := range []string{`{"input":"a failing one","stream":false}`, `{"input":"a failing one","stream_format":"sse"}`, `{"input":"a failing one"}`} {
			r := rawDo(t, ts.URL, "HTTP/1.0", "POST", "/v1/audio/speech", body, nil)
			id := r.Header.Get("X-Request-Id")
			for _, leak := range []string{"/home/operator", "/opt/build", "CUDA error", "tensorfold-native", "last output"} {
				if strings.Contains(string(r.Body), leak) {
					t.Fatalf("midway %v %s: the reply holds %q: %s", midway, body, leak, r.Body)
				}
			}
			if r.Status != 500 || id == "" || !strings.Contains(string(r.Body), id) {
				t.Fatalf("midway %v %s: status %d, want 500 naming request id %q: %s", midway, body, r.Status, id, r.Body)
			}
			if l := logs.String(); !strings.Contains(l, id) || !strings.Contains(l, "kernel.cu:42") {
				t.Fatalf("midway %v: the log lacks the request id %s or the engine's output:\n%s", midway, id, l)
			}
		}
		if midway {
			r := rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", `{"input":"a failing one","stream_format":"sse"}`, nil)
			if id := r.Header.Get("X-Request-Id"); strings.Contains(string(r.Body), "/home/operator") || !strings.Contains(string(r.Body), id) {
				t.Fatalf("SSE error event: %s", r.Body)
			}
		}
	}
}

// TestBuiltinVoiceAndAliases checks the model's own voice under its served
// name, names mapped to served voices, and the advice for an OpenAI voice
// name that is not mapped.
func TestBuiltinVoiceAndAliases(t *testing.T) {
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) {
		c.BuiltinVoice = "default"
		c.VoiceAliases = map[string]string{"alloy": "alice", "echo": "default", "nova": "ghost"}
	})
	speak := func(voice string) rawExchange {
		v := ""
		if voice != "" {
			v = `,"voice":"` + voice + `"`
		}
		return rawDo(t, ts.URL, "HTTP/1.1", "POST", "/v1/audio/speech", `{"input":"Which voice is this?","response_format":"pcm","stream":false`+v+`}`, nil)
	}
	none, alice := speak(""), speak("alice")
	for voice, want := range map[string][]byte{"default": none.Body, "echo": none.Body, "alloy": alice.Body} {
		if r := speak(voice); r.Status != 200 || !bytes.Equal(r.Body, want) || bytes.Equal(none.Body, alice.Body) {
			t.Fatalf("voice %q: status %d, %d bytes: want the audio of the voice it names", voice, r.Status, len(r.Body))
		}
	}
	list := rawDo(t, ts.URL, "HTTP/1.1", "GET", "/v1/voices", "", nil)
	var vs struct{ Data []VoiceInfo }
	json.Unmarshal(list.Body, &vs)
	got := map[string]VoiceInfo{}
	for _, v := range vs.Data {
		got[v.ID] = v
	}
	if got["default"].Origin != "builtin" || got["alloy"].Origin != "alias" || got["alloy"].AliasOf != "alice" || got["alice"].Origin != "engine" {
		t.Fatalf("GET /v1/voices: %s", list.Body)
	}
	for voice, says := range map[string][]string{
		"shimmer": {`"shimmer"`, "--voice-alias shimmer=", "repeat"},
		"nova":    {`"nova"`, `"ghost"`, "--voice-alias nova=ghost"},
		"nobody":  {`"nobody"`, "GET /v1/voices"},
	} {
		r := speak(voice)
		var e struct {
			Error struct{ Message, Param string }
		}
		json.Unmarshal(r.Body, &e)
		if r.Status != 400 || e.Error.Param != "voice" {
			t.Fatalf("voice %q: %d %s", voice, r.Status, r.Body)
		}
		for _, s := range says {
			if !strings.Contains(e.Error.Message, s) {
				t.Errorf("voice %q: message %q does not say %q", voice, e.Error.Message, s)
			}
		}
	}

	off, _, _, _ := startFake(t, nil) // no built-in voice configured
	if r := rawDo(t, off.URL, "HTTP/1.1", "POST", "/v1/audio/speech", `{"input":"a","voice":"default"}`, nil); r.Status != 400 {
		t.Fatalf("built-in voice turned off: %d", r.Status)
	}
}
