package clip

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeFFmpeg installs an "ffmpeg" script that records its arguments and
// prints out (a file) or fails with msg.
func fakeFFmpeg(t *testing.T, out, msg string) (bin, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > " + argsFile + "\n"
	if out != "" {
		script += "cat " + out + "\n"
	} else {
		script += "echo 'first line' >&2; echo '" + msg + "' >&2; exit 1\n"
	}
	bin = filepath.Join(dir, "ffmpeg")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, argsFile
}

func TestDecodeWAVDirect(t *testing.T) {
	a, err := Decoder{FFmpeg: "/nonexistent/ffmpeg"}.Decode(context.Background(), "testdata/fmt-float32-48k.wav")
	if err != nil || a.Rate != 48000 || a.Coding != "float32" {
		t.Fatalf("got %v, %v", a, err)
	}
	_, err = (Decoder{}).Decode(context.Background(), "testdata/fmt-alaw.wav")
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "fmt-alaw.wav") {
		t.Fatalf("want ErrUnsupported naming the file, got %v", err)
	}
}

func TestDecodeThroughFFmpeg(t *testing.T) {
	in := filepath.Join(t.TempDir(), "-clip.mp3")
	if err := os.WriteFile(in, []byte("ID3 not really an mp3"), 0o644); err != nil {
		t.Fatal(err)
	}
	wav, _ := filepath.Abs("testdata/fmt-pcm24-48k-stereo.wav")
	bin, argsFile := fakeFFmpeg(t, wav, "")
	a, err := Decoder{FFmpeg: bin}.Decode(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if a.Rate != 48000 || a.Channels != 2 {
		t.Fatalf("want ffmpeg's 48 kHz stereo, got %d x%d", a.Rate, a.Channels)
	}
	args, _ := os.ReadFile(argsFile)
	want := "-nostdin\n-v\nerror\n-i\n" + in + "\n-map\n0:a:0\n-vn\n-c:a\npcm_f32le\n-f\nwav\n-\n"
	if string(args) != want {
		t.Fatalf("ffmpeg arguments:\nwant %q\ngot  %q", want, args)
	}
}

func TestDecodeFFmpegFails(t *testing.T) {
	in := filepath.Join(t.TempDir(), "broken.ogg")
	os.WriteFile(in, []byte("OggS broken"), 0o644)
	bin, _ := fakeFFmpeg(t, "", "Invalid data found when processing input")
	_, err := Decoder{FFmpeg: bin}.Decode(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "broken.ogg") || !strings.Contains(err.Error(), "Invalid data found") {
		t.Fatalf("want ffmpeg's last message with the file name, got %v", err)
	}
	_, err = Decoder{FFmpeg: filepath.Join(t.TempDir(), "no-ffmpeg")}.Decode(context.Background(), in)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "install ffmpeg") {
		t.Fatalf("want ErrUnsupported saying to install ffmpeg, got %v", err)
	}
	if _, err := (Decoder{}).Decode(context.Background(), filepath.Join(t.TempDir(), "missing.wav")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want a not-exist error, got %v", err)
	}
}

func TestDecodeWithRealFFmpeg(t *testing.T) {
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg not installed")
	}
	flac := filepath.Join(t.TempDir(), "sine.flac")
	out, err := exec.Command(bin, "-nostdin", "-v", "error", "-i", "testdata/fmt-pcm24-48k-stereo.wav", "-c:a", "flac", flac).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	want, _ := (Decoder{}).Decode(context.Background(), "testdata/fmt-pcm24-48k-stereo.wav")
	got, err := (Decoder{}).Decode(context.Background(), flac)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rate != 48000 || got.Channels != 2 || len(got.Data) != len(want.Data) {
		t.Fatalf("want 48 kHz stereo of %d samples, got %d Hz x%d of %d", len(want.Data), got.Rate, got.Channels, len(got.Data))
	}
	for i := range want.Data {
		if got.Data[i] != want.Data[i] {
			t.Fatalf("sample %d: want %v, got %v (FLAC is lossless)", i, want.Data[i], got.Data[i])
		}
	}
}
