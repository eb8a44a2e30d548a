package clip

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Decoder reads audio files: WAV itself, anything else through ffmpeg.
type Decoder struct {
	// FFmpeg is the ffmpeg binary; empty means "ffmpeg" looked up on PATH.
	FFmpeg string
	// MaxDuration, when set, refuses a longer recording with ErrTooLong
	// without decoding it: a WAV file's length is read from its header,
	// and ffmpeg decodes no more than a moment past MaxDuration.
	MaxDuration time.Duration
}

// ErrTooLong is the error of a recording longer than Decoder.MaxDuration.
var ErrTooLong = errors.New("clip: recording too long")

func (d Decoder) tooLong(path string, dur time.Duration) error {
	what := fmt.Sprintf("%.1f s long", dur.Seconds())
	if dur < 0 {
		what = "longer"
	}
	return &FormatError{Name: path, Offset: -1, Err: ErrTooLong,
		Msg: fmt.Sprintf("the recording is %s; at most %.0f s is kept: cut it to the speech you want", what, d.MaxDuration.Seconds())}
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
		if d.MaxDuration > 0 {
			if dur, ok := wavDuration(f); ok && dur > d.MaxDuration {
				return nil, d.tooLong(path, dur)
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("clip: %s: %w", path, err)
		}
		a, err := ReadWAV(f)
		return a, nameErr(err, path)
	}
	a, err := d.ffmpeg(ctx, path)
	if err == nil && d.MaxDuration > 0 && a.Duration() > d.MaxDuration {
		return nil, d.tooLong(path, -1)
	}
	return a, err
}

// wavDuration reads a WAV file's length from its fmt and data chunk
// headers; ok is false when they cannot be read (ReadWAV then says why).
func wavDuration(f *os.File) (time.Duration, bool) {
	st, err := f.Stat()
	if err != nil {
		return 0, false
	}
	var fm *wavFmt
	var hdr [8]byte
	for off := int64(12); off+8 <= st.Size(); {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return 0, false
		}
		size := int64(binary.LittleEndian.Uint32(hdr[4:]))
		body := off + 8
		switch string(hdr[:4]) {
		case "fmt ":
			if size > 1<<16 || body+size > st.Size() {
				return 0, false
			}
			c := make([]byte, size)
			if _, err := f.ReadAt(c, body); err != nil {
				return 0, false
			}
			if fm, err = parseFmt(c, body); err != nil {
				return 0, false
			}
		case "data":
			if fm == nil {
				return 0, false
			}
			if avail := st.Size() - body; size == 0xFFFFFFFF || size == 0 || size > avail {
				size = avail
			}
			frames := size / int64(fm.blockAlign)
			return time.Duration(float64(frames) / float64(fm.rate) * float64(time.Second)), true
		}
		off = body + size + size&1
	}
	return 0, false
}

func nameErr(err error, path string) error {
	var fe *FormatError
	if errors.As(err, &fe) && fe.Name == "" {
		fe.Name = path
	}
	return err
}

func (d Decoder) ffmpeg(ctx context.Context, path string) (*Audio, error) {
	var stdout bytes.Buffer
	if err := d.runFFmpeg(ctx, path, &stdout); err != nil {
		return nil, err
	}
	a, err := ReadWAV(&stdout)
	if err != nil {
		return nil, fmt.Errorf("clip: %s: reading ffmpeg's output: %w", path, err)
	}
	return a, nil
}

// runFFmpeg decodes path with ffmpeg (d.FFmpeg, else the one on PATH) to
// a 32-bit float WAV of its first audio stream written to stdout, cut a
// moment past d.MaxDuration. Its errors name path and say what to do.
func (d Decoder) runFFmpeg(ctx context.Context, path string, stdout io.Writer) error {
	exe, err := exec.LookPath(cmp.Or(d.FFmpeg, "ffmpeg"))
	if err != nil {
		return &FormatError{Name: path, Offset: -1, Err: ErrUnsupported,
			Msg: "not a WAV file and ffmpeg is not on PATH: install ffmpeg, or convert the clip to WAV"}
	}
	in := path
	if strings.HasPrefix(in, "-") {
		in = "./" + in // never let a file name read as an option
	}
	args := []string{"-nostdin", "-v", "error", "-i", in, "-map", "0:a:0", "-vn", "-c:a", "pcm_f32le"}
	if d.MaxDuration > 0 {
		// a moment past the limit, so a longer recording shows as longer
		args = append(args, "-t", strconv.FormatFloat((d.MaxDuration+100*time.Millisecond).Seconds(), 'f', 3, 64))
	}
	cmd := exec.CommandContext(ctx, exe, append(args, "-f", "wav", "-")...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("clip: %s: ffmpeg could not decode it: %w: %s", path, err, lastLine(stderr.String()))
	}
	return nil
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
