package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/supervise"
)

func TestWholeWAV(t *testing.T) {
	ts, _, _, _ := startFake(t, nil)
	resp := post(t, ts.URL, `{"model":"drama-3","input":"Hello there.","voice":"narrator","stream":false}`)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	h := resp.Header
	if h.Get("Content-Type") != "audio/wav" || h.Get("X-Sample-Rate") != "44100" || h.Get("X-Finish-Reason") != "stop" || h.Get("X-Request-Id") == "" {
		t.Fatalf("headers %v", h)
	}
	if string(body[:4]) != "RIFF" || int(binary.LittleEndian.Uint32(body[40:])) != len(body)-44 || int(binary.LittleEndian.Uint32(body[4:])) != len(body)-8 {
		t.Fatalf("WAV sizes are not exact: riff %d data %d len %d", binary.LittleEndian.Uint32(body[4:]), binary.LittleEndian.Uint32(body[40:]), len(body))
	}
	if binary.LittleEndian.Uint32(body[24:]) != 44100 || binary.LittleEndian.Uint16(body[22:]) != 1 || binary.LittleEndian.Uint16(body[34:]) != 16 {
		t.Fatal("WAV format is not mono 16-bit 44.1 kHz")
	}
}

func TestStreamedEqualsWholeWithTrailer(t *testing.T) {
	ts, _, _, _ := startFake(t, nil)
	whole := rawPost(t, ts.URL, `{"input":"Same words twice.","voice":"alice","response_format":"pcm","stream":false}`)
	stream := rawPost(t, ts.URL, `{"input":"Same words twice.","voice":"alice","response_format":"pcm","stream":true}`)
	if whole.Status != 200 || stream.Status != 200 {
		t.Fatalf("status %d %d", whole.Status, stream.Status)
	}
	if !stream.Terminated || stream.Trailer.Get("X-Finish-Reason") != "stop" || !strings.Contains(stream.Header.Get("Trailer"), "X-Finish-Reason") {
		t.Fatalf("stream must end with its terminating chunk and the declared trailer: %+v %v", stream.Trailer, stream.Header)
	}
	if len(whole.Body) == 0 || !bytes.Equal(whole.Body, stream.Body) {
		t.Fatalf("streamed PCM (%d bytes) differs from whole (%d bytes)", len(stream.Body), len(whole.Body))
	}
	wav := rawPost(t, ts.URL, `{"input":"Same words twice.","voice":"alice","stream":true}`)
	if binary.LittleEndian.Uint32(wav.Body[4:]) != 0xFFFFFFFF || binary.LittleEndian.Uint32(wav.Body[40:]) != 0xFFFFFFFF || !bytes.Equal(wav.Body[44:], whole.Body) {
		t.Fatal("a streamed WAV carries 0xFFFFFFFF sizes then the same PCM")
	}
}

func TestFinishReasons(t *testing.T) {
	ts, _, _, _ := startFake(t, nil)
	long := rawPost(t, ts.URL, `{"input":"`+strings.Repeat("word ", 200)+`","max_frames":3,"stream":true,"response_format":"pcm"}`)
	if long.Trailer.Get("X-Finish-Reason") != "length" || len(long.Body) != 3*2048*2 {
		t.Fatalf("max_frames: reason %q, %d bytes", long.Trailer.Get("X-Finish-Reason"), len(long.Body))
	}
	resp := post(t, ts.URL, `{"input":"and then [silence-test] nothing","stream":false}`)
	resp.Body.Close()
	if resp.Header.Get("X-Finish-Reason") != "silence" {
		t.Fatalf("silence: %v", resp.Header)
	}
}

func TestFailureAfterFirstChunkHasNoTerminatingChunk(t *testing.T) {
	ts, _, _, _ := startFake(t, func(f *enginetest.Fake, _ *served) { f.FailAfterFirstChunk = true })
	r := rawPost(t, ts.URL, `{"input":"`+strings.Repeat("long text ", 100)+`","stream":true,"response_format":"pcm"}`)
	if r.Status != 200 || len(r.Body) == 0 || r.Terminated {
		t.Fatalf("status %d, %d bytes, terminated %v: a failed stream must not look complete", r.Status, len(r.Body), r.Terminated)
	}
	resp := post(t, ts.URL, `{"input":"`+strings.Repeat("long text ", 100)+`","stream":false}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || resp.Header.Get("Retry-After") != "5" || !strings.Contains(string(body), `"code":"engine_failed"`) || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Trailer") != "" {
		t.Fatalf("whole reply of a failed synthesis: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

func TestSSE(t *testing.T) {
	ts, _, _, _ := startFake(t, nil)
	whole := rawPost(t, ts.URL, `{"input":"Events please.","response_format":"pcm"}`)
	resp := post(t, ts.URL, `{"input":"Events please.","stream_format":"sse","response_format":"pcm"}`)
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatal(resp.Header)
	}
	var pcm []byte
	var done map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		switch ev["type"] {
		case "speech.audio.delta":
			b, _ := base64.StdEncoding.DecodeString(ev["audio"].(string))
			pcm = append(pcm, b...)
		case "speech.audio.done":
			done = ev
		}
	}
	if done == nil || done["finish_reason"] != "stop" || !bytes.Equal(pcm, whole.Body) {
		t.Fatalf("done %v, %d PCM bytes vs %d", done, len(pcm), len(whole.Body))
	}
}

func TestBadRequests(t *testing.T) {
	ts, _, _, _ := startFake(t, nil)
	refs := func(frames int, v int) string {
		row := strings.TrimSuffix(strings.Repeat(fmt.Sprint(v)+",", frames), ",")
		return `[{"text":"hi","vq_codes":[` + strings.TrimSuffix(strings.Repeat("["+row+"],", 10), ",") + `]}]`
	}
	tests := []struct{ name, body, param string }{
		{"no input", `{"voice":"narrator"}`, "input"},
		{"empty input", `{"input":"  "}`, "input"},
		{"long input", `{"input":"` + strings.Repeat("é", 4097) + `"}`, "input"},
		{"speed", `{"input":"a","speed":1.5}`, "speed"},
		{"brackets", `{"input":"a","instructions":"[whisper]"}`, "instructions"},
		{"line break", `{"input":"a","instructions":"calm\nloud"}`, "instructions"},
		{"tag", `{"input":"a","instructions":"<b>loud</b>"}`, "instructions"},
		{"unknown voice", `{"input":"a","voice":"nobody"}`, "voice"},
		{"voice object", `{"input":"a","voice":{"id":"nobody"}}`, "voice"},
		{"mp3 without ffmpeg", `{"input":"a","response_format":"mp3"}`, "response_format"},
		{"format", `{"input":"a","response_format":"ogg"}`, "response_format"},
		{"stream format", `{"input":"a","stream_format":"ws"}`, "stream_format"},
		{"ref range", `{"input":"a","references":` + refs(5, 5000) + `}`, "references"},
		{"ref frames", `{"input":"a","references":` + refs(647, 1) + `}`, "references"},
		{"max frames", `{"input":"a","max_frames":100000}`, "max_frames"},
		{"unknown field", `{"input":"a","seed":3}`, ""},
		{"not json", `input=a`, ""},
		{"deep", `{"input":"a","references":[[[[[[[[[[1]]]]]]]]]]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, ts.URL, tt.body)
			defer resp.Body.Close()
			var e struct {
				Error struct {
					Message, Type, Code string
					Param               *string
				}
			}
			json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != 400 || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
				t.Fatalf("status %d, error %+v", resp.StatusCode, e.Error)
			}
			if tt.param != "" && (e.Error.Param == nil || *e.Error.Param != tt.param) {
				t.Fatalf("param = %v, want %s (%s)", e.Error.Param, tt.param, e.Error.Message)
			}
		})
	}
	resp := post(t, ts.URL, `{"input":"`+strings.Repeat("a", MaxBodyBytes)+`"}`)
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("oversized body: %d", resp.StatusCode)
	}
}

func TestConcurrentClientsOneAtATimeFIFO(t *testing.T) {
	ts, _, ce, _ := startFake(t, func(f *enginetest.Fake, c *served) { c.MaxQueue = 100; f.FrameDelay = 100 * time.Microsecond })
	ce.order = make(chan string, 200)
	const clients = 100
	var wg sync.WaitGroup
	codes := make([]int, clients)
	for i := range clients {
		wg.Go(func() {
			resp := post(t, ts.URL, fmt.Sprintf(`{"input":"client %d says hello"}`, i))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	close(ce.order)
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("client %d got %d", i, c)
		}
	}
	if n := len(ce.order); n != clients {
		t.Fatalf("engine saw %d syntheses, want %d", n, clients)
	}
	if p := ce.peak.Load(); p != 1 {
		t.Fatalf("engine saw %d syntheses at once, want 1", p)
	}
}

func TestQueueBoundGives503WithRetryAfter(t *testing.T) {
	ts, _, _, _ := startFake(t, func(f *enginetest.Fake, c *served) { c.MaxQueue = 2; f.FrameDelay = 20 * time.Millisecond })
	const clients = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	retry := ""
	for range clients {
		wg.Go(func() {
			resp := post(t, ts.URL, `{"input":"a long enough text to keep the engine busy","stream":true}`)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			got[resp.StatusCode]++
			if resp.StatusCode == 503 {
				retry = resp.Header.Get("Retry-After")
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if got[200] < 3 || got[503] == 0 || got[200]+got[503] != clients || retry == "" {
		t.Fatalf("statuses %v, Retry-After %q: want 1 in the engine + 2 queued served, the rest 503 with Retry-After", got, retry)
	}
}

func TestCancelMidStreamThenNextSucceeds(t *testing.T) {
	ts, _, _, _ := startFake(t, func(f *enginetest.Fake, _ *served) { f.FrameDelay = 5 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/audio/speech", strings.NewReader(`{"input":"`+strings.Repeat("many words ", 100)+`","stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1000)
	io.ReadFull(resp.Body, buf)
	cancel()
	resp.Body.Close()
	next := post(t, ts.URL, `{"input":"right after a cancel"}`)
	io.Copy(io.Discard, next.Body)
	next.Body.Close()
	if next.StatusCode != 200 {
		t.Fatalf("next request after a cancel: %d (the busy window must never reach a client)", next.StatusCode)
	}
}

func TestReadyHealthModelsMetrics(t *testing.T) {
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) {
		c.Status = supervise.Status{Phase: "loading", Progress: 0.4}
	})
	resp, _ := http.Get(ts.URL + "/ready")
	var st supervise.Status
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != 503 || st.Phase != "loading" || st.Progress != 0.4 {
		t.Fatalf("ready: %d %+v", resp.StatusCode, st)
	}
	if r := post(t, ts.URL, `{"input":"too early"}`); r.StatusCode != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("speech before ready: %d", r.StatusCode)
	}
	for path, want := range map[string]string{"/health": `"ok"`, "/v1/models": `"drama-3-test"`, "/v1/voices": `"narrator"`, "/metrics": `drama_requests_total{status="503"} 1`} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
}
