package native_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/standin"
	"github.com/drama-tts/drama/internal/filehash"
)

func TestCheckBinary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bin")
	os.WriteFile(p, []byte("engine"), 0o755)
	sum, _, err := filehash.SHA256(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := native.CheckBinary(p, strings.ToUpper(sum)); err != nil {
		t.Errorf("same digest: %v", err)
	}
	err = native.CheckBinary(p, strings.Repeat("0", 64))
	var ce *native.ChecksumError
	if !errors.Is(err, native.ErrChecksum) || !errors.As(err, &ce) || ce.Got != sum || !strings.Contains(err.Error(), "want 000") {
		t.Errorf("mismatch: %v", err)
	}
	if err := native.CheckBinary(p+"x", sum); err == nil || errors.Is(err, native.ErrChecksum) {
		t.Errorf("missing file: %v", err)
	}
}

func TestServeArgs(t *testing.T) {
	got := native.CUDA.ServeArgs(native.ServeOptions{Port: 9, Variant: "nvfp4", Voices: "/v", DefaultVoice: "amy", LongForm: true, MaxFrames: 700})
	want := "serve --port 9 --parallel 1 --prompt-cache-gib 0 --max-frames 700 --voices /v --default-voice amy --long-form --long-form-chars 500 --long-form-history 1 --cfg-gamma 1.5 --cfg-batched"
	if strings.Join(got, " ") != want {
		t.Errorf("cuda nvfp4:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	got = native.CUDA.ServeArgs(native.ServeOptions{Port: 9, Variant: "nvfp4", NoGuidance: true})
	if slices.Contains(got, "--cfg-gamma") {
		t.Errorf("guidance off: %v", got)
	}
	if slices.Contains(native.CUDA.ServeArgs(native.ServeOptions{Port: 9, Variant: "full"}), "--cfg-batched") {
		t.Error("full: want no guidance flags")
	}
	history := 0
	got = native.CUDA.ServeArgs(native.ServeOptions{Port: 9, Variant: "full", LongForm: true, LongFormChars: 320, LongFormHistory: &history})
	if want := "--long-form --long-form-chars 320 --long-form-history 0"; !strings.Contains(strings.Join(got, " "), want) {
		t.Errorf("long form 320/0: %s, want %s", strings.Join(got, " "), want)
	}
	got = native.Metal.ServeArgs(native.ServeOptions{Port: 9, Variant: "macos", LongForm: true})
	want = "--serve --port 9 --max-frames 8190 --cfg-gamma 1.5 --cfg-batched"
	if strings.Join(got, " ") != want {
		t.Errorf("metal:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestEnviron(t *testing.T) {
	got := native.Environ([]string{"PATH=/bin", "SECRET=x", "HF_TOKEN=y", "TENSORFOLD_X=1", "CUDA_VISIBLE_DEVICES=0"}, "A=b")
	want := []string{"PATH=/bin", "TENSORFOLD_X=1", "CUDA_VISIBLE_DEVICES=0", "A=b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func writeClip(t *testing.T, samples int) string {
	t.Helper()
	pcm := make([]byte, 2*samples)
	for i := range pcm {
		pcm[i] = byte(i * 7)
	}
	p := filepath.Join(t.TempDir(), "clip.wav")
	os.WriteFile(p, append(native.WAVHeader(len(pcm)), pcm...), 0o644)
	return p
}

func TestEncodeClipBothShapes(t *testing.T) {
	skipUnsupported(t)
	clip := writeClip(t, 5000)
	codec := filepath.Join(t.TempDir(), "codec.pth")
	os.WriteFile(codec, []byte("x"), 0o644)
	f, _ := os.Open(clip)
	want, err := standin.EncodeClip(f)
	f.Close()
	if err != nil || len(want) != 10 || len(want[0]) != 3 {
		t.Fatalf("in process: %v (%d codebooks)", err, len(want))
	}
	for _, fl := range []*native.Flavor{native.CUDA, native.Metal} {
		cfg := native.EncodeConfig{Flavor: fl, Binary: standinBin, Codec: codec, Env: native.Environ(os.Environ())}
		got, err := native.EncodeClip(context.Background(), cfg, clip)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v: codes differ from the in-process encoder", fl.Name, err)
		}
	}
	cfg := native.EncodeConfig{Flavor: native.CUDA, Binary: standinBin, Codec: codec, Env: []string{standin.EnvFault + "=encode-fail"}}
	_, err = native.EncodeClip(context.Background(), cfg, clip)
	var ee *native.ExitError
	if !errors.As(err, &ee) || ee.Code != 1 || !strings.Contains(err.Error(), "out of memory") {
		t.Errorf("failing encoder: %v", err)
	}
	cfg.Env = nil
	_, err = native.EncodeClip(context.Background(), cfg, writeClip(t, 31*44100))
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "want at most 30 s") {
		t.Errorf("long clip: %v", err)
	}
}

func TestStandinEncodeRefuses(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":     native.WAVHeader(0),
		"not wav":   []byte("hello world, not a wav file at all......"),
		"truncated": append(native.WAVHeader(100), 1, 2),
	} {
		if _, err := standin.EncodeClip(strings.NewReader(string(data))); !errors.Is(err, standin.ErrClip) {
			t.Errorf("%s: %v, want ErrClip", name, err)
		}
	}
}

func TestLogRotatedPastMaxSize(t *testing.T) {
	skipUnsupported(t)
	cfg := launchConfig(t)
	os.WriteFile(cfg.LogPath, make([]byte, native.MaxLogSize+1), 0o600)
	p, err := native.Launch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(time.Second)
	old, err1 := os.Stat(cfg.LogPath + ".1")
	cur, err2 := os.Stat(cfg.LogPath)
	if err1 != nil || err2 != nil || old.Size() != native.MaxLogSize+1 || cur.Size() == 0 || cur.Size() > 4096 {
		t.Errorf("old %v %v, current %v %v: want the big log moved aside and a fresh one", old, err1, cur, err2)
	}
}
