package native_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/standin"
)

// writeVoice writes a minimal voice file of the flavor's format.
func writeVoice(t testing.TB, dir, id string, metal bool) {
	t.Helper()
	v := map[string]any{"format": "drama3-voice/1", "id": id, "name": id,
		"references": []any{map[string]any{"text": "Hello.", "frames": 1, "vq_codes": [][]int{{1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}}}}}
	if metal {
		v = map[string]any{"format": "drama3-http-voice/1", "id": id, "name": id, "source": map[string]string{"kind": "synthetic"},
			"references": []any{map[string]any{"text": "Hello.", "frames": 1, "codes": [][]int{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}}}}
	}
	b, _ := json.Marshal(v)
	if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func wavClip(seed uint64, samples int) []byte {
	pcm := enginetest.Tone(seed, samples)
	return append(native.WAVHeader(len(pcm)), pcm...)
}

// suiteConfig is the conformance configuration for a flavor with the
// stand-in as its native engine.
func suiteConfig(t testing.TB, e engine.Engine, metal bool) enginetest.Config {
	voices := t.TempDir()
	writeVoice(t, voices, "alice", metal)
	sum, err := native.FileSHA256(standinBin)
	if err != nil {
		t.Fatal(err)
	}
	variant := "nvfp4"
	if metal {
		variant = "macos"
	}
	codecDir := t.TempDir()
	os.WriteFile(filepath.Join(codecDir, "codec.pth"), []byte("stand-in codec"), 0o644)
	return enginetest.Config{
		Engine: e,
		Start: engine.StartRequest{
			Install:   engine.Install{Variant: variant, ModelDir: codecDir, EngineBin: standinBin, EngineSHA256: sum},
			VoicesDir: voices, Admission: engine.AdmissionOff, RuntimeDir: t.TempDir(),
			Env: []string{standin.EnvRTF + "=0.02", standin.EnvLoadTime + "=100ms"},
		},
		Voice:       "alice",
		SilenceText: "A pause follows. " + standin.MarkerSilence,
		Clips: []engine.Clip{
			{ID: "one", Data: wavClip(1, 3*native.SamplesPerFrame+5), Text: "one"},
			{ID: "two", Data: wavClip(2, 10*native.SamplesPerFrame), Text: "two"},
		},
	}
}

func newEngine(f *native.Flavor) *native.Engine {
	return native.NewEngine(f, native.EngineOptions{Version: "test", AnyOS: true})
}

func TestConformanceDirect(t *testing.T) {
	skipUnsupported(t)
	for _, f := range []*native.Flavor{native.CUDA, native.Metal} {
		t.Run(f.Name, func(t *testing.T) {
			enginetest.Run(t, suiteConfig(t, newEngine(f), f == native.Metal))
		})
	}
}

func TestConformanceInProcess(t *testing.T) {
	skipUnsupported(t)
	for _, f := range []*native.Flavor{native.CUDA, native.Metal} {
		t.Run(f.Name, func(t *testing.T) {
			enginetest.Run(t, suiteConfig(t, enginetest.InProcess(t, newEngine(f)), f == native.Metal))
		})
	}
}

func TestConformanceSubprocess(t *testing.T) {
	skipUnsupported(t)
	for _, f := range []*native.Flavor{native.CUDA, native.Metal} {
		t.Run(f.Name, func(t *testing.T) {
			p := enginetest.Subprocess(t, enginetest.TestBinaryPlugin(t, f.Name), enginetest.ServeEnv+"="+f.Name)
			enginetest.Run(t, suiteConfig(t, p, f == native.Metal))
		})
	}
}
