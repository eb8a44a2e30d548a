package clip

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// longWAV writes a WAV of the given length at 1 kHz, 16-bit mono.
func longWAV(t *testing.T, d time.Duration) string {
	t.Helper()
	n := int(d.Seconds() * 1000)
	b := append(WAVHeader(1000, 2*n), make([]byte, 2*n)...)
	p := filepath.Join(t.TempDir(), "long.wav")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMaxDurationRefusesALongWAVFromItsHeader: a 49-minute WAV is refused
// by a 60 s limit without its samples being read.
func TestMaxDurationRefusesALongWAVFromItsHeader(t *testing.T) {
	p := longWAV(t, 49*time.Minute)
	dec := Decoder{MaxDuration: 60 * time.Second}
	var err error
	n := allocated(func() { _, err = dec.Decode(context.Background(), p) })
	if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "2940.0 s long") || !strings.Contains(err.Error(), "at most 60 s") {
		t.Fatalf("err = %v, want ErrTooLong naming 2940.0 s and the 60 s limit", err)
	}
	if n > 1<<20 {
		t.Fatalf("refusing the clip allocated %d bytes: it was decoded (the file is 5.9 MB)", n)
	}
	short := longWAV(t, 59*time.Second)
	if a, err := dec.Decode(context.Background(), short); err != nil || a.Frames() != 59000 {
		t.Fatalf("a 59 s clip: %v, %v", a, err)
	}
}

// TestMaxDurationBoundsFFmpeg: through ffmpeg no more than a moment past
// the limit is decoded, and a longer recording is refused.
func TestMaxDurationBoundsFFmpeg(t *testing.T) {
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg not installed")
	}
	flac := filepath.Join(t.TempDir(), "long.flac")
	out, err := exec.Command(bin, "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=220:sample_rate=8000:duration=2940", "-c:a", "flac", flac).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	dec := Decoder{MaxDuration: 60 * time.Second}
	n := allocated(func() { _, err = dec.Decode(context.Background(), flac) })
	if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "at most 60 s") {
		t.Fatalf("err = %v, want ErrTooLong", err)
	}
	// 60.1 s at 8 kHz is 1.9 MB of float (a few times that with the
	// buffers); the whole clip would be 94 MB of float alone
	if n > 48<<20 {
		t.Fatalf("decoding allocated %d bytes: ffmpeg decoded past the limit", n)
	}
}

func TestMaxDurationArguments(t *testing.T) {
	in := filepath.Join(t.TempDir(), "clip.mp3")
	os.WriteFile(in, []byte("ID3 not really an mp3"), 0o644)
	wav, _ := filepath.Abs("testdata/fmt-pcm24-48k-stereo.wav")
	bin, argsFile := fakeFFmpeg(t, wav, "")
	if _, err := (Decoder{FFmpeg: bin, MaxDuration: 60 * time.Second}).Decode(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	args, _ := os.ReadFile(argsFile)
	if !strings.Contains(string(args), "\n-t\n60.100\n-f\nwav\n") {
		t.Fatalf("ffmpeg arguments %q: want -t 60.100 before the output", args)
	}
}
