// Package nativetest helps tests run engines against the stand-in native
// server: it builds the stand-in binary, writes voice files and clips, and
// makes the conformance configuration for a flavor.
package nativetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/standin"
	"github.com/drama-tts/drama/internal/filehash"
)

// StandinPackage is the import path of the stand-in binary's main package.
const StandinPackage = "github.com/drama-tts/drama/engine/native/standin/cmd/tensorfold-standin"

// Build builds the main package pkg into dir/name with the go command and
// returns the binary's path.
func Build(dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// WriteVoice writes a minimal voice file for the flavor: drama3-voice/1 for
// CUDA, drama3-http-voice/1 for Metal.
func WriteVoice(t testing.TB, dir, id string, f *native.Flavor) {
	t.Helper()
	b, _ := json.Marshal(VoiceFile(id, f))
	if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// VoiceFile returns a minimal voice document with one one-frame reference.
func VoiceFile(id string, f *native.Flavor) map[string]any {
	if f == native.Metal {
		return map[string]any{"format": "drama3-http-voice/1", "id": id, "name": id,
			"source": map[string]string{"kind": "synthetic"}, "note": "test voice",
			"references": []any{map[string]any{"text": "Hello.", "frames": 1, "codes": [][]int{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}}}}
	}
	return map[string]any{"format": "drama3-voice/1", "id": id, "name": id,
		"references": []any{map[string]any{"text": "Hello.", "frames": 1, "vq_codes": [][]int{{1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}}}}}
}

// WAVClip returns a canonical WAV of samples samples of noise from seed.
func WAVClip(seed uint64, samples int) []byte {
	pcm := enginetest.Tone(seed, samples)
	return append(native.WAVHeader(len(pcm)), pcm...)
}

// StartRequest starts the flavor with the stand-in at bin as its native
// engine: a voice "alice", the binary's checksum, admission off, a
// temporary runtime directory, and the stand-in paced at 50x real time.
func StartRequest(t testing.TB, f *native.Flavor, bin string) engine.StartRequest {
	t.Helper()
	voices, model := t.TempDir(), t.TempDir()
	WriteVoice(t, voices, "alice", f)
	os.WriteFile(filepath.Join(model, "codec.pth"), []byte("stand-in codec"), 0o644)
	sum, _, err := filehash.SHA256(context.Background(), bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	variant := "nvfp4"
	if f == native.Metal {
		variant = "macos"
	}
	return engine.StartRequest{
		Install:   engine.Install{Variant: variant, ModelDir: model, EngineBin: bin, EngineSHA256: sum},
		VoicesDir: voices, Admission: engine.AdmissionOff, RuntimeDir: t.TempDir(),
		Env: []string{standin.EnvRTF + "=0.02", standin.EnvLoadTime + "=100ms"},
	}
}

// SuiteConfig is the conformance configuration for e, an engine of flavor
// f driving the stand-in at bin.
func SuiteConfig(t testing.TB, e engine.Engine, f *native.Flavor, bin string) enginetest.Config {
	return enginetest.Config{
		Engine:      e,
		Start:       StartRequest(t, f, bin),
		Voice:       "alice",
		SilenceText: "A pause follows. " + standin.MarkerSilence,
		Clips: []engine.Clip{
			{ID: "one", Data: WAVClip(1, 3*native.SamplesPerFrame+5), Text: "one"},
			{ID: "two", Data: WAVClip(2, 10*native.SamplesPerFrame), Text: "two"},
		},
	}
}
