//go:build unix

package native_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/nativetest"
	"github.com/drama-tts/drama/engine/native/standin"
)

// started returns a started engine of flavor f over the stand-in, stopped
// when the test ends.
func started(t *testing.T, f *native.Flavor, edit func(*engine.StartRequest)) (*native.Engine, engine.StartRequest) {
	t.Helper()
	skipUnsupported(t)
	e := newEngine(f)
	req := nativetest.StartRequest(t, f, standinBin)
	if edit != nil {
		edit(&req)
	}
	if err := e.Start(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(context.Background(), engine.StopRequest{Grace: time.Second}) })
	return e, req
}

func ref() engine.Reference {
	codes := make([][]int, 10)
	for i := range codes {
		codes[i] = []int{1, 2, 3}
	}
	return engine.Reference{Text: "A clip.", Codes: codes}
}

func TestMetalDifferences(t *testing.T) {
	e, _ := started(t, native.Metal, nil)
	ctx := context.Background()
	_, err := e.Synthesize(ctx, engine.SynthesisRequest{Input: "hi", References: []engine.Reference{ref()}})
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "catalog") {
		t.Errorf("references: %v, want invalid input naming the catalog", err)
	}
	r, err := enginetest.Synthesize(ctx, e, engine.SynthesisRequest{Input: "hi", MaxFrames: 8190})
	if err != nil || r.Final.Reason != engine.FinishStop {
		t.Errorf("max_frames 8190: %v %+v", err, r.Final)
	}
	if _, err := e.Synthesize(ctx, engine.SynthesisRequest{Input: "hi", MaxFrames: 8191}); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("max_frames 8191: %v, want invalid input", err)
	}
	d, _ := e.Describe(ctx)
	c := d.Capabilities
	if c.References || c.LongForm || !c.VoiceCatalog || !c.RestartToClone || c.MaxFrames != 8190 {
		t.Errorf("capabilities %+v", c)
	}
	for _, req := range []engine.StartRequest{{LongForm: true}, {MaxFrames: 8191}} {
		if err := newEngine(native.Metal).Start(ctx, req, nil); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("start %+v: %v, want invalid input", req, err)
		}
	}
}

// TestMetalCloneByRestart publishes a voice to the catalog: the running
// server does not know it until Start runs again.
func TestMetalCloneByRestart(t *testing.T) {
	e, req := started(t, native.Metal, nil)
	ctx := context.Background()
	doc, _ := json.Marshal(nativetest.VoiceFile("bob", native.Metal))
	if err := native.PublishVoice(req.VoicesDir, "bob", doc); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Synthesize(ctx, engine.SynthesisRequest{Input: "hi", Voice: "bob"}); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("before restart: %v, want an unknown voice", err)
	}
	if err := e.Start(ctx, req, nil); err != nil {
		t.Fatal(err)
	}
	vs, _ := e.Voices(ctx)
	if len(vs) != 2 || vs[1].ID != "bob" || vs[1].Source != "synthetic" {
		t.Errorf("voices after restart: %+v", vs)
	}
	if _, err := enginetest.Synthesize(ctx, e, engine.SynthesisRequest{Input: "hi", Voice: "bob"}); err != nil {
		t.Errorf("after restart: %v", err)
	}
	if err := native.PublishVoice(req.VoicesDir, "Bad Id", doc); err == nil {
		t.Error("publish with a bad id: want an error")
	}
	if err := native.PublishVoice(req.VoicesDir, "carol", doc); err == nil {
		t.Error("publish with an id that differs from the file's: want an error")
	}
}

func TestCUDAReferencesAndLongForm(t *testing.T) {
	e, _ := started(t, native.CUDA, func(r *engine.StartRequest) { r.LongForm = true; r.MaxFrames = 4000 })
	ctx := context.Background()
	a, err := enginetest.Synthesize(ctx, e, engine.SynthesisRequest{Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := enginetest.Synthesize(ctx, e, engine.SynthesisRequest{Input: "hi", References: []engine.Reference{ref()}})
	if err != nil {
		t.Fatal(err)
	}
	if string(a.PCM) == string(b.PCM) {
		t.Error("references did not change the audio")
	}
	long := strings.Repeat("A sentence of a long text goes here. ", 20)
	for _, stream := range []bool{false, true} {
		r, err := enginetest.Synthesize(ctx, e, engine.SynthesisRequest{Input: long, Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		if r.Final.LongFormSegments < 2 || len(r.Final.SegmentOffsets) != r.Final.LongFormSegments-1 {
			t.Errorf("stream=%v: final %+v: want segments with offsets", stream, r.Final)
		}
	}
}

func TestEngineChecksumMismatch(t *testing.T) {
	skipUnsupported(t)
	req := nativetest.StartRequest(t, native.CUDA, standinBin)
	req.EngineSHA256 = strings.Repeat("ab", 32)
	e := newEngine(native.CUDA)
	err := e.Start(context.Background(), req, nil)
	if !errors.Is(err, engine.ErrFailed) || !errors.Is(err, native.ErrChecksum) || !strings.Contains(err.Error(), "want abab") {
		t.Fatalf("mismatch: %v", err)
	}
	req.AllowEngineMismatch = true
	if err := e.Start(context.Background(), req, nil); err != nil {
		t.Fatalf("mismatch allowed: %v", err)
	}
	e.Stop(context.Background(), engine.StopRequest{})
}

func TestStartFailureCarriesExitAndTail(t *testing.T) {
	skipUnsupported(t)
	req := nativetest.StartRequest(t, native.CUDA, standinBin)
	req.Env = append(req.Env, standin.EnvFault+"=crash-on-start")
	var last engine.LifecycleEvent
	err := newEngine(native.CUDA).Start(context.Background(), req, func(ev engine.LifecycleEvent) { last = ev })
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Kind != engine.KindFailed || !strings.Contains(ee.LogTail, "out of memory") {
		t.Fatalf("err %v: want engine failed with the log tail", err)
	}
	if last.Phase != engine.PhaseExited || last.ExitCode != 70 || last.LogTail == "" {
		t.Errorf("last event %+v: want exited with code 70 and the tail", last)
	}
}

func TestStartStopsPlantedLeftover(t *testing.T) {
	skipUnsupported(t)
	req := nativetest.StartRequest(t, native.CUDA, standinBin)
	left := startOrphanLike(t)
	defer func() { left.Process.Kill(); left.Wait() }()
	writeRecordOf(t, filepath.Join(req.RuntimeDir, "engine-cuda.json"), left.Process.Pid, 0)
	var msgs []string
	e := newEngine(native.CUDA)
	if err := e.Start(context.Background(), req, func(ev engine.LifecycleEvent) { msgs = append(msgs, ev.Message) }); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background(), engine.StopRequest{})
	waitGone(t, left.Process.Pid, "the planted leftover engine")
	if !strings.Contains(strings.Join(msgs, "\n"), "stopped a leftover engine") {
		t.Errorf("events %q: want a message about the leftover", msgs)
	}
}

func TestStartNeverSignalsRecycledPID(t *testing.T) {
	skipUnsupported(t)
	req := nativetest.StartRequest(t, native.CUDA, standinBin)
	other := exec.Command("sleep", "30")
	other.Start()
	defer func() { other.Process.Kill(); other.Wait() }()
	rec := recordOf(t, other.Process.Pid, 0)
	rec.Exe = standinBin
	native.WriteRuntimeFile(filepath.Join(req.RuntimeDir, "engine-cuda.json"), rec)
	e := newEngine(native.CUDA)
	if err := e.Start(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background(), engine.StopRequest{})
	if !alive(other.Process.Pid) {
		t.Error("an unrelated process named by a stale runtime file was signalled")
	}
}

func TestWrongOSRefused(t *testing.T) {
	wrong := native.Metal
	if runtime.GOOS == "darwin" {
		wrong = native.CUDA
	}
	e := native.NewEngine(wrong, native.EngineOptions{Version: "test"})
	err := e.Start(context.Background(), engine.StartRequest{}, nil)
	if err == nil || !strings.Contains(err.Error(), "runs on "+wrong.GOOS+" only") || !strings.Contains(err.Error(), "use drama-engine-") {
		t.Errorf("start: %v, want a message naming the OS and the right plugin", err)
	}
	if _, err := e.Encode(context.Background(), engine.EncodeRequest{}, nil); err == nil {
		t.Error("encode on the wrong OS: want an error")
	}
	if d, err := e.Describe(context.Background()); err != nil || d.Name != wrong.Name {
		t.Errorf("describe on the wrong OS: %+v %v", d, err)
	}
}

func TestAdmissionAndVariant(t *testing.T) {
	skipUnsupported(t)
	req := nativetest.StartRequest(t, native.CUDA, standinBin)
	req.Admission, req.Variant = engine.AdmissionOwn, "macos"
	if err := newEngine(native.CUDA).Start(context.Background(), req, nil); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("unknown variant: %v, want invalid input", err)
	}
	req.Admission = "sometimes"
	if err := newEngine(native.CUDA).Start(context.Background(), req, nil); err == nil {
		t.Error("unknown admission mode: want an error")
	}
}

func TestEncodeRefusesBadClips(t *testing.T) {
	skipUnsupported(t)
	req := nativetest.StartRequest(t, native.CUDA, standinBin)
	e := newEngine(native.CUDA)
	for name, data := range map[string][]byte{
		"raw pcm":   enginetest.Tone(1, 100),
		"empty":     native.WAVHeader(0),
		"too long":  nativetest.WAVClip(1, 31*native.SampleRate),
		"truncated": nativetest.WAVClip(1, 100)[:100],
	} {
		_, err := e.Encode(context.Background(), engine.EncodeRequest{Install: req.Install, Clips: []engine.Clip{{ID: "c", Data: data}}}, nil)
		if !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("%s: %v, want invalid input", name, err)
		}
	}
	path := filepath.Join(t.TempDir(), "clip.wav")
	os.WriteFile(path, nativetest.WAVClip(3, 5000), 0o644)
	out, err := e.Encode(context.Background(), engine.EncodeRequest{Install: req.Install, Clips: []engine.Clip{{ID: "p", Path: path, Text: "t"}}}, nil)
	if err != nil || len(out) != 1 || out[0].Frames != 3 || out[0].Samples != 5000 || out[0].Text != "t" {
		t.Errorf("clip by path: %+v %v", out, err)
	}
}

// TestLongFormAndPrefixCacheReachTheServer: the long-form parameters
// become the server's flags and the prefix cache its environment, as the
// stand-in's log records them; a parameter out of range is refused
// before anything starts.
func TestLongFormAndPrefixCacheReachTheServer(t *testing.T) {
	_, req := started(t, native.CUDA, func(r *engine.StartRequest) {
		r.LongForm = true
		r.Params = map[string]string{native.ParamLongFormChars: "320", native.ParamLongFormHistory: "0"}
		r.Env = append(r.Env, native.EnvPrefixCache+"=0")
	})
	log, err := os.ReadFile(filepath.Join(req.RuntimeDir, "engine-cuda.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "--long-form --long-form-chars 320 --long-form-history 0") || !strings.Contains(string(log), "standin: prefix cache: 0\n") {
		t.Fatalf("engine log:\n%s", log)
	}
	for _, params := range []map[string]string{{native.ParamLongFormChars: "0"}, {native.ParamLongFormHistory: "-1"}, {native.ParamLongFormChars: "many"}} {
		e := newEngine(native.CUDA)
		r := nativetest.StartRequest(t, native.CUDA, standinBin)
		r.Params = params
		if err := e.Start(context.Background(), r, nil); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("%v: %v, want invalid input", params, err)
		}
	}
	e := newEngine(native.Metal)
	r := nativetest.StartRequest(t, native.Metal, standinBin)
	r.Params = map[string]string{native.ParamLongFormChars: "300"}
	if err := e.Start(context.Background(), r, nil); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("metal with long_form_chars: %v, want invalid input", err)
	}
}
