package clip

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// MaxFileDuration is the longest recording Open accepts (ErrTooLong): the
// analysis keeps a few bytes for every 10 ms of it in memory, and this
// bounds them (about 90 MB) whatever the rate of a clip under
// MaxDataBytes. A 1 GiB WAV of 16-bit mono at 16 kHz lasts 9.3 h.
const MaxFileDuration = 12 * time.Hour

// rawChunk is the bytes of a WAV data chunk read at once.
const rawChunk = 1 << 20

// File is a clip read from its file in passes, never held whole: a WAV file
// is read in place, anything else is first decoded by ffmpeg into a
// temporary WAV file. Prepare reads a Clip's File at 44.1 kHz mono in
// chunks, so its memory does not grow with the clip. A File is not safe
// for concurrent use.
type File struct {
	Rate     int    // sample frames a second
	Channels int    // 1 or more
	Coding   string // e.g. "pcm16", "pcm24", "pcm32", "float32"

	r          *os.File
	temp       string // the ffmpeg output to remove at Close, or ""
	fm         *wavFmt
	body, size int64 // the data chunk
	clipRuns   int   // runs of 3 or more samples at full scale, all channels
	clipped    int   // samples in those runs
	raw        []byte
	conv       []float32
}

// Frames returns the number of sample frames.
func (f *File) Frames() int64 { return f.size / int64(f.fm.blockAlign) }

// Duration returns the length of the audio.
func (f *File) Duration() time.Duration {
	return time.Duration(float64(f.Frames()) / float64(f.Rate) * float64(time.Second))
}

// Close closes the file and removes a temporary ffmpeg output.
func (f *File) Close() error {
	err := f.r.Close()
	if f.temp != "" {
		os.Remove(f.temp)
	}
	return err
}

// Open opens the audio file at path to be read in passes, with Decode's
// rules (a WAV file read directly, anything else through ffmpeg, the same
// refusals) and MaxFileDuration. It reads the samples through once, to
// refuse corrupt float data and to count clipping, holding a bounded chunk
// of them at a time. Close the File when done.
func (d Decoder) Open(ctx context.Context, path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("clip: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.IsDir() {
		f.Close()
		return nil, &FormatError{Name: path, Offset: -1, Err: ErrUnsupported,
			Msg: "a directory, not a clip: give the recordings in it, e.g. " + filepath.Join(path, "*.wav")}
	}
	var magic [12]byte
	n, _ := io.ReadFull(f, magic[:])
	if n == 12 && string(magic[0:4]) == "RIFF" && string(magic[8:12]) == "WAVE" {
		if d.MaxDuration > 0 {
			if dur, ok := wavDuration(f); ok && dur > d.MaxDuration {
				f.Close()
				return nil, d.tooLong(path, dur)
			}
		}
		wf, err := openWAV(f, "")
		if err == nil {
			err = wf.check(path)
		}
		if err != nil {
			f.Close()
			return nil, nameErr(err, path)
		}
		return wf, nil
	}
	f.Close()
	wf, err := d.ffmpegFile(ctx, path)
	if err != nil {
		return nil, err
	}
	if d.MaxDuration > 0 && wf.Duration() > d.MaxDuration {
		wf.Close()
		return nil, d.tooLong(path, -1)
	}
	if err := wf.check(path); err != nil {
		wf.Close()
		return nil, nameErr(err, path)
	}
	return wf, nil
}

// check refuses a recording longer than MaxFileDuration, then scans the
// samples.
func (f *File) check(path string) error {
	if dur := f.Duration(); dur > MaxFileDuration {
		return &FormatError{Name: path, Offset: -1, Err: ErrTooLong, Msg: fmt.Sprintf(
			"the recording is %.1f h long; at most %.0f h is analysed: cut it to the speech you want", dur.Hours(), MaxFileDuration.Hours())}
	}
	return f.scan()
}

// openWAV reads the headers of the WAV file r.
func openWAV(r *os.File, temp string) (*File, error) {
	st, err := r.Stat()
	if err != nil {
		return nil, fmt.Errorf("clip: %w", err)
	}
	fm, body, size, err := scanWAV(r, st.Size())
	if err != nil {
		return nil, err
	}
	name, _ := codingName(fm, 0)
	return &File{Rate: fm.rate, Channels: fm.channels, Coding: name, r: r, temp: temp, fm: fm, body: body, size: size}, nil
}

// scan reads every sample once: a NaN or infinite float is refused as
// decodeData refuses it, and runs of samples at full scale are counted per
// channel as clippingWarnings counts them.
func (f *File) scan() error {
	c := f.Channels
	run := make([]int, c)
	var first int64
	err := f.chunks(0, f.Frames(), func(x []float32) error {
		if f.fm.tag == wavFloat {
			if err := checkFinite(x, f.body, first); err != nil {
				return err
			}
		}
		for i, v := range x {
			ch := int((first + int64(i)) % int64(c))
			if math.Abs(float64(v)) >= 0.999 {
				run[ch]++
				continue
			}
			if run[ch] >= 3 {
				f.clipRuns++
				f.clipped += run[ch]
			}
			run[ch] = 0
		}
		first += int64(len(x))
		return nil
	})
	for _, n := range run {
		if n >= 3 {
			f.clipRuns++
			f.clipped += n
		}
	}
	return err
}

// chunks calls fn with the samples (interleaved, as convertSamples gives
// them) of frames [first, first+n), at most rawChunk bytes of them at a
// time. fn must not keep x.
func (f *File) chunks(first, n int64, fn func(x []float32) error) error {
	ba := int64(f.fm.blockAlign)
	per := max(1, rawChunk/ba)
	for done := int64(0); done < n; {
		k := min(per, n-done)
		b := grow(&f.raw, int(k*ba))
		if _, err := f.r.ReadAt(b, f.body+(first+done)*ba); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("clip: %s: read samples at offset %d (file changed?): %w", f.r.Name(), f.body+(first+done)*ba, err)
		}
		f.conv = convertInto(f.conv, b, f.fm)
		if err := fn(f.conv); err != nil {
			return err
		}
		done += k
	}
	return nil
}

// readMono fills dst with the mean of the channels of frames first..., as
// Audio.Mono computes it.
func (f *File) readMono(dst []float32, first int64) error {
	c := f.Channels
	inv := 1 / float32(c)
	at := 0
	return f.chunks(first, int64(len(dst)), func(x []float32) error {
		if c == 1 {
			at += copy(dst[at:], x)
			return nil
		}
		for i := 0; i+c <= len(x); i += c {
			var s float32
			for _, v := range x[i : i+c] {
				s += v
			}
			dst[at] = s * inv
			at++
		}
		return nil
	})
}

// grow returns (*b)[:n], reallocating *b when it is too short.
func grow[T any](b *[]T, n int) []T {
	if cap(*b) < n {
		*b = make([]T, n)
	}
	return (*b)[:n]
}

// ffmpegFile decodes path with ffmpeg, as Decode does, into a temporary WAV
// file of at most MaxDataBytes of audio and opens it.
func (d Decoder) ffmpegFile(ctx context.Context, path string) (*File, error) {
	tmp, err := os.CreateTemp("", "drama-clip-*.wav")
	if err != nil {
		return nil, fmt.Errorf("clip: %s: %w", path, err)
	}
	fail := func(err error) (*File, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	out := &limitWriter{w: tmp, n: MaxDataBytes + 1<<20}
	if err := d.runFFmpeg(ctx, path, out); err != nil {
		return fail(err)
	}
	if out.err != nil {
		return fail(fmt.Errorf("clip: %s: %w", path, out.err))
	}
	wf, err := openWAV(tmp, tmp.Name())
	if err != nil {
		return fail(fmt.Errorf("clip: %s: reading ffmpeg's output: %w", path, err))
	}
	return wf, nil
}

// limitWriter writes the first n bytes to w and drops the rest, as a
// limited read of the same stream would; err is w's first error.
type limitWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if k := min(int64(len(p)), l.n); k > 0 && l.err == nil {
		_, l.err = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
