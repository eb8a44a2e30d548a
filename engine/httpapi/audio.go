package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"time"

	"github.com/drama-tts/drama/engine"
)

// wavHeader returns a 44-byte RIFF header for mono 16-bit PCM at
// SampleRate. dataBytes < 0 writes the 0xFFFFFFFF sizes of a stream whose
// length is not known.
func wavHeader(dataBytes int64) []byte {
	riff, data := uint32(0xFFFFFFFF), uint32(0xFFFFFFFF)
	if dataBytes >= 0 {
		riff, data = uint32(36+dataBytes), uint32(dataBytes)
	}
	b := make([]byte, 44)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], riff)
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:], engine.Channels)
	binary.LittleEndian.PutUint32(b[24:], engine.SampleRate)
	binary.LittleEndian.PutUint32(b[28:], engine.SampleRate*engine.Channels*engine.BitsPerSample/8)
	binary.LittleEndian.PutUint16(b[32:], engine.Channels*engine.BitsPerSample/8)
	binary.LittleEndian.PutUint16(b[34:], engine.BitsPerSample)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], data)
	return b
}

func contentType(format string) string {
	switch format {
	case "wav":
		return "audio/wav"
	case "mp3":
		return "audio/mpeg"
	case "opus":
		return "audio/ogg"
	case "flac":
		return "audio/flac"
	case "aac":
		return "audio/aac"
	}
	return "audio/pcm"
}

// observer times a reply for the metrics.
type observer struct {
	s          *Server
	start      time.Time // the request arrived
	turn       time.Time // the request got the engine
	firstAudio time.Duration
	samples    int64
}

func (o *observer) chunk(n int) {
	if o.firstAudio == 0 {
		o.firstAudio = time.Since(o.start)
	}
	o.samples += int64(n / 2)
}

func (o *observer) done(f engine.Final) {
	if o.samples == 0 {
		return
	}
	elapsed := time.Since(o.turn)
	audio := time.Duration(o.samples) * time.Second / engine.SampleRate
	o.s.metrics.observeSynthesis(o.firstAudio, elapsed, audio)
}

// replyWhole collects the audio, then sends it with exact sizes and the
// finish reason as a header.
func (s *Server) replyWhole(w *statusRecorder, format string, stream engine.AudioStream, obs *observer) error {
	var pcm bytes.Buffer
	for {
		chunk, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		obs.chunk(len(chunk))
		pcm.Write(chunk)
	}
	h := w.Header()
	h.Set("Content-Type", contentType(format))
	finishHeaders(h, stream.Final())
	size := int64(pcm.Len())
	if format == "wav" {
		size += 44
	}
	h.Set("Content-Length", fmt.Sprint(size))
	w.WriteHeader(http.StatusOK)
	if format == "wav" {
		w.Write(wavHeader(int64(pcm.Len())))
	}
	_, err := w.Write(pcm.Bytes())
	return err
}

// replyStream sends each chunk as it comes, with the finish reason as a
// trailer. Headers go out with the first chunk, so an error before any
// audio is still a proper error reply.
func (s *Server) replyStream(w *statusRecorder, format string, stream engine.AudioStream, obs *observer) error {
	h := w.Header()
	h.Set("Content-Type", contentType(format))
	h.Set("Trailer", "X-Finish-Reason, X-Long-Form-Segments")
	h.Set("Cache-Control", "no-store")
	for first := true; ; first = false {
		chunk, err := stream.Next()
		if errors.Is(err, io.EOF) {
			if first && format == "wav" {
				w.Write(wavHeader(-1))
			}
			break
		}
		if err != nil {
			return err
		}
		obs.chunk(len(chunk))
		if first && format == "wav" {
			w.Write(wavHeader(-1))
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		w.Flush()
	}
	finishHeaders(h, stream.Final())
	return nil
}

// replySSE sends speech.audio.delta events with base64 PCM, then one
// speech.audio.done event with the finish reason.
func (s *Server) replySSE(w *statusRecorder, stream engine.AudioStream, obs *observer) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	for {
		chunk, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		obs.chunk(len(chunk))
		if err := writeEvent(w, map[string]any{"type": "speech.audio.delta", "audio": base64.StdEncoding.EncodeToString(chunk)}); err != nil {
			return err
		}
	}
	f := stream.Final()
	done := map[string]any{"type": "speech.audio.done", "finish_reason": f.Reason.String(),
		"sample_rate": engine.SampleRate, "samples": obs.samples}
	if f.LongFormSegments > 1 {
		done["long_form_segments"] = longFormValue(f)
	}
	return writeEvent(w, done)
}

func writeEvent(w *statusRecorder, v any) error {
	data, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
		return err
	}
	w.Flush()
	return nil
}

// ffmpegArgs are the output options per response format.
var ffmpegArgs = map[string][]string{
	"mp3":  {"-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"},
	"opus": {"-c:a", "libopus", "-b:a", "64k", "-f", "ogg"},
	"flac": {"-c:a", "flac", "-f", "flac"},
	"aac":  {"-c:a", "aac", "-b:a", "128k", "-f", "adts"},
}

// replyEncoded pipes the PCM through ffmpeg (run directly, no shell) and
// streams what it writes.
func (s *Server) replyEncoded(w *statusRecorder, ctx context.Context, format string, stream engine.AudioStream, obs *observer) error {
	args := append([]string{"-hide_banner", "-loglevel", "error", "-f", "s16le", "-ar", fmt.Sprint(engine.SampleRate), "-ac", "1", "-i", "pipe:0"}, ffmpegArgs[format]...)
	cmd := exec.CommandContext(ctx, s.cfg.FFmpeg, append(args, "pipe:1")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = &flushWriter{w: w, contentType: contentType(format)}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "encoder_failed", Message: fmt.Sprintf("start ffmpeg: %v", err)}
	}
	streamErr, inputErr := feed(stdin, stream, obs)
	waitErr := cmd.Wait()
	switch {
	case streamErr != nil: // the engine failed
		return streamErr
	case waitErr != nil || inputErr != nil: // the encoder failed (a broken pipe means it exited early)
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "encoder_failed",
			Message: fmt.Sprintf("ffmpeg could not encode %s: %v: %s (wav and pcm need no encoder)", format, errors.Join(waitErr, inputErr), bytes.TrimSpace(stderr.Bytes()))}
	}
	w.Header().Set("Trailer", "X-Finish-Reason")
	finishHeaders(w.Header(), stream.Final())
	return nil
}

// feed writes the PCM into the encoder. It tells the engine's failure
// (streamErr) from the encoder's refusal of its input (inputErr).
func feed(stdin io.WriteCloser, stream engine.AudioStream, obs *observer) (streamErr, inputErr error) {
	defer stdin.Close()
	for {
		chunk, err := stream.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return err, nil
		}
		obs.chunk(len(chunk))
		if _, err := stdin.Write(chunk); err != nil {
			return nil, fmt.Errorf("ffmpeg input: %w", err)
		}
	}
}

// flushWriter writes encoder output to the reply, flushing as it goes.
type flushWriter struct {
	w           *statusRecorder
	contentType string
}

func (f *flushWriter) Write(p []byte) (int, error) {
	if !f.w.wroteHeader {
		f.w.Header().Set("Content-Type", f.contentType)
		f.w.Header().Set("Trailer", "X-Finish-Reason")
	}
	n, err := f.w.Write(p)
	f.w.Flush()
	return n, err
}
