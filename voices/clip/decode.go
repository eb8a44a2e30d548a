package clip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Decoder reads audio files: WAV itself, anything else through ffmpeg.
type Decoder struct {
	// FFmpeg is the ffmpeg binary; empty means "ffmpeg" looked up on PATH.
	FFmpeg string
}

// Decode reads the audio file at path with the default Decoder.
func Decode(ctx context.Context, path string) (*Audio, error) {
	return Decoder{}.Decode(ctx, path)
}

// Decode reads the audio file at path. A RIFF/WAVE file is read directly;
// any other file is decoded by ffmpeg (run directly, never through a
// shell) to 32-bit float at its own rate and channel count. Without ffmpeg,
// a file that is not WAV is refused with ErrUnsupported.
func (d Decoder) Decode(ctx context.Context, path string) (*Audio, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("clip: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &FormatError{Name: path, Offset: -1, Err: ErrUnsupported,
			Msg: "a directory, not a clip: give the recordings in it, e.g. " + filepath.Join(path, "*.wav")}
	}
	var magic [12]byte
	n, _ := io.ReadFull(f, magic[:])
	if n == 12 && string(magic[0:4]) == "RIFF" && string(magic[8:12]) == "WAVE" {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("clip: %s: %w", path, err)
		}
		a, err := ReadWAV(f)
		return a, nameErr(err, path)
	}
	return d.ffmpeg(ctx, path)
}

func nameErr(err error, path string) error {
	var fe *FormatError
	if errors.As(err, &fe) && fe.Name == "" {
		fe.Name = path
	}
	return err
}

func (d Decoder) ffmpeg(ctx context.Context, path string) (*Audio, error) {
	bin := d.FFmpeg
	if bin == "" {
		bin = "ffmpeg"
	}
	exe, err := exec.LookPath(bin)
	if err != nil {
		return nil, &FormatError{Name: path, Offset: -1, Err: ErrUnsupported,
			Msg: "not a WAV file and ffmpeg is not on PATH: install ffmpeg, or convert the clip to WAV"}
	}
	in := path
	if strings.HasPrefix(in, "-") {
		in = "./" + in // never let a file name read as an option
	}
	cmd := exec.CommandContext(ctx, exe, "-nostdin", "-v", "error", "-i", in,
		"-map", "0:a:0", "-vn", "-c:a", "pcm_f32le", "-f", "wav", "-")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("clip: %s: ffmpeg could not decode it: %w: %s", path, err, lastLine(stderr.String()))
	}
	a, err := ReadWAV(&stdout)
	if err != nil {
		return nil, fmt.Errorf("clip: %s: reading ffmpeg's output: %w", path, err)
	}
	return a, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "(no message)"
	}
	return s
}
