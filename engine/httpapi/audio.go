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
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine"
)

// wavHeader returns a 44-byte RIFF header for mono 16-bit PCM at
// SampleRate. dataBytes < 0 writes the 0xFFFFFFFF sizes of a stream whose
// length is not known.
func wavHeader(dataBytes int64) []byte { return wavHeaderAt(dataBytes, engine.SampleRate) }

// wavHeaderAt is wavHeader for PCM at rate samples a second.
func wavHeaderAt(dataBytes int64, rate int) []byte {
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
	binary.LittleEndian.PutUint32(b[24:], uint32(rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(rate*engine.Channels*engine.BitsPerSample/8))
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
		return "audio/opus" // Ogg Opus, labelled as OpenAI labels it
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

// sink is where a reply's body goes: the connection (flushed as it goes)
// or a buffer for a whole reply.
type sink interface {
	io.Writer
	Flush()
}

// bufferSink collects a whole reply in the pieces it came in, counting its
// size as they come: no copy to grow one buffer, and the body goes out
// from the pieces.
type bufferSink struct {
	pieces [][]byte
	size   int
}

// sinkPiece is the smallest piece a bufferSink allocates: an engine chunk,
// and room for the small writes of an encoder to share one.
const sinkPiece = engine.MaxChunk

func (b *bufferSink) Write(p []byte) (int, error) {
	b.size += len(p)
	if n := len(b.pieces); n > 0 && cap(b.pieces[n-1])-len(b.pieces[n-1]) >= len(p) {
		b.pieces[n-1] = append(b.pieces[n-1], p...)
		return len(p), nil
	}
	b.pieces = append(b.pieces, append(make([]byte, 0, max(len(p), sinkPiece)), p...))
	return len(p), nil
}

func (*bufferSink) Flush() {}

// replyWhole sends one reply with exact sizes, Content-Length and the
// finish reason as a header. When the engine said them before the audio
// (a sized header: the native engine's whole replies) and the reply is
// the engine's own PCM or WAV, it goes out as the audio arrives
// (replySized). Otherwise (an encoder's output, another rate, an engine
// that knows its length only at the end) it is made into memory and sent
// once the synthesis is done, so a failure is a proper error reply.
func (s *Server) replyWhole(ctx context.Context, w *Recorder, req *speech, stream engine.AudioStream, obs *observer) error {
	if h := stream.Header(); h.Sized && !req.SSE && req.SampleRate == 0 && (req.Format == "wav" || req.Format == "pcm") &&
		h.Samples <= maxSizedSamples {
		return replySized(w, req, stream, obs)
	}
	var buf bufferSink
	if err := s.produce(ctx, &buf, req, stream, obs); err != nil {
		return err
	}
	if req.Format == "wav" && !req.SSE && len(buf.pieces) > 0 && len(buf.pieces[0]) >= 44 {
		// the header is the first write, so whole in the first piece
		binary.LittleEndian.PutUint32(buf.pieces[0][4:], uint32(buf.size-8))
		binary.LittleEndian.PutUint32(buf.pieces[0][40:], uint32(buf.size-44))
	}
	h := w.Header()
	h.Set("Content-Type", replyType(req))
	finishHeaders(h, stream.Final())
	h.Set("Content-Length", strconv.Itoa(buf.size))
	w.WriteHeader(http.StatusOK)
	for _, p := range buf.pieces {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// maxSizedSamples is the most audio a WAV's 32-bit sizes can state.
const maxSizedSamples = (1<<32 - 1 - 36) / 2

// replySized sends a whole reply as the engine's audio arrives, its
// length, its WAV header's sizes and its finish reason taken from the
// engine's sized header; they go out with the first audio, so a failure
// before it is still a proper error reply. After it, a failure leaves the
// body short of its Content-Length, which every HTTP client reports as
// failed: the last sample is held back until the synthesis has ended as
// its header said (AudioHeader.CheckEnd), so no reply goes out complete
// unless its audio is.
func replySized(w *Recorder, req *speech, stream engine.AudioStream, obs *observer) error {
	h := stream.Header()
	size := 2 * h.Samples
	var head []byte
	if req.Format == "wav" {
		head = wavHeader(size)
	}
	send := func(p []byte) error {
		if !w.wroteHeader {
			hdr := w.Header()
			hdr.Set("Content-Type", replyType(req))
			finishHeaders(hdr, engine.Final{Reason: h.Reason, LongFormSegments: h.LongFormSegments, SegmentOffsets: h.SegmentOffsets})
			hdr.Set("Content-Length", strconv.FormatInt(int64(len(head))+size, 10))
			w.WriteHeader(http.StatusOK)
			if len(head) > 0 {
				if _, err := w.Write(head); err != nil {
					return err
				}
			}
		}
		if len(p) == 0 {
			return nil // an empty reply: its header, if any, is all of it
		}
		_, err := w.Write(p)
		w.Flush()
		return err
	}
	var got int64 // PCM bytes taken from the engine
	var tail [2]byte
	for {
		chunk, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			continue
		}
		if len(chunk)%2 != 0 {
			return engine.Errorf(engine.KindFailed, "synthesize: a chunk of %d bytes ends inside a sample", len(chunk))
		}
		obs.chunk(len(chunk))
		got += int64(len(chunk))
		if got > size {
			return engine.Errorf(engine.KindFailed, "synthesize: the engine sent more than the %d samples its header said", h.Samples)
		}
		if got == size {
			// the last sample waits for the end
			copy(tail[:], chunk[len(chunk)-len(tail):])
			chunk = chunk[:len(chunk)-len(tail)]
		}
		if err := send(chunk); err != nil {
			return err
		}
	}
	if err := h.CheckEnd(got/2, stream.Final()); err != nil {
		return err
	}
	if size == 0 {
		return send(nil)
	}
	return send(tail[:])
}

// replyStreamed sends the reply as the engine makes it, chunked, with the
// finish reason as a declared trailer. Headers go out with the first
// bytes, so a failure before any audio is still a proper error reply. What
// may wait unsent on the connection is bounded first (boundSendBuffer), so
// that a client that stops reading is seen to stop while the engine has
// made little ahead of it.
func (s *Server) replyStreamed(ctx context.Context, w *Recorder, req *speech, stream engine.AudioStream, obs *observer) error {
	boundSendBuffer(ctx)
	h := w.Header()
	h.Set("Content-Type", replyType(req))
	h.Set("Cache-Control", "no-store")
	if !req.SSE {
		h.Set("Trailer", "X-Finish-Reason, X-Long-Form-Segments")
	}
	if err := s.produce(ctx, w, req, stream, obs); err != nil {
		return err
	}
	if !req.SSE {
		finishHeaders(h, stream.Final())
	}
	return nil
}

func replyType(req *speech) string {
	if req.SSE {
		return "text/event-stream"
	}
	return contentType(req.Format)
}

// produce writes the body of the reply the request asked for: SSE events,
// a WAV (with 0xFFFFFFFF sizes, fixed by replyWhole for a whole reply),
// raw PCM, or the encoder's output.
func (s *Server) produce(ctx context.Context, dst sink, req *speech, stream engine.AudioStream, obs *observer) error {
	switch {
	case req.SSE:
		return s.produceSSE(dst, req, stream, obs)
	case (req.Format == "wav" || req.Format == "pcm") && req.SampleRate == 0:
		return producePCM(dst, req.Format == "wav", stream, obs)
	}
	return s.produceEncoded(ctx, dst, req, stream, obs)
}

// producePCM sends each chunk as it comes, after a streaming WAV header
// when wav is set.
func producePCM(dst sink, wav bool, stream engine.AudioStream, obs *observer) error {
	for first := true; ; first = false {
		chunk, err := stream.Next()
		if errors.Is(err, io.EOF) {
			if first && wav {
				dst.Write(wavHeader(-1))
			}
			return nil
		}
		if err != nil {
			return err
		}
		obs.chunk(len(chunk))
		if first && wav {
			dst.Write(wavHeader(-1))
		}
		if _, err := dst.Write(chunk); err != nil {
			return err
		}
		dst.Flush()
	}
}

// produceSSE sends speech.audio.delta events with base64 PCM, then one
// speech.audio.done event with the usage, as OpenAI's stream does, and
// drama's finish reason.
func (s *Server) produceSSE(dst sink, req *speech, stream engine.AudioStream, obs *observer) error {
	for {
		chunk, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		obs.chunk(len(chunk))
		if err := writeEvent(dst, map[string]any{"type": "speech.audio.delta", "audio": base64.StdEncoding.EncodeToString(chunk)}); err != nil {
			return err
		}
	}
	f := stream.Final()
	done := map[string]any{"type": "speech.audio.done", "usage": usage(req, obs.samples),
		"finish_reason": f.Reason.String(), "sample_rate": engine.SampleRate, "samples": obs.samples}
	if f.LongFormSegments > 1 {
		done["long_form_segments"] = longFormValue(f)
	}
	return writeEvent(dst, done)
}

// usage is OpenAI's usage object for a synthesis: the prompt's tokens in
// (when drama serve counts them), one token out per frame of audio the
// model made, and their sum.
func usage(req *speech, samples int64) map[string]int64 {
	out := (samples + engine.SamplesPerFrame - 1) / engine.SamplesPerFrame
	u := map[string]int64{"output_tokens": out}
	if req.PromptTokens > 0 {
		u["input_tokens"] = int64(req.PromptTokens)
		u["total_tokens"] = int64(req.PromptTokens) + out
	}
	return u
}

func writeEvent(dst sink, v any) error {
	data, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(dst, "data: %s\n\n", data); err != nil {
		return err
	}
	dst.Flush()
	return nil
}

// ffmpegArgs are the output options per response format (wav and pcm
// pass through ffmpeg only to change the sample rate: it writes the PCM,
// drama the WAV header).
var ffmpegArgs = map[string][]string{
	"wav":  {"-f", "s16le"},
	"pcm":  {"-f", "s16le"},
	"mp3":  {"-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"},
	"opus": {"-c:a", "libopus", "-b:a", "64k", "-f", "ogg"},
	"flac": {"-c:a", "flac", "-f", "flac"},
	"aac":  {"-c:a", "aac", "-b:a", "128k", "-f", "adts"},
}

// produceEncoded pipes the PCM through ffmpeg (run directly, no shell),
// which writes each packet as soon as it is encoded (-flush_packets 1): the
// first bytes leave after about 0.2 s of audio.
func (s *Server) produceEncoded(ctx context.Context, dst sink, req *speech, stream engine.AudioStream, obs *observer) error {
	format := req.Format
	// No probing of the input (its format is given): ffmpeg would otherwise
	// read seconds of audio before it encodes the first packet.
	args := append([]string{"-hide_banner", "-loglevel", "error", "-probesize", "32", "-analyzeduration", "0",
		"-f", "s16le", "-ar", fmt.Sprint(engine.SampleRate), "-ac", "1", "-i", "pipe:0"}, ffmpegArgs[format]...)
	if req.Bitrate != "" {
		args = append(args, "-b:a", req.Bitrate)
	}
	if req.SampleRate > 0 {
		args = append(args, "-ar", strconv.Itoa(req.SampleRate))
	}
	cmd := exec.CommandContext(ctx, s.cfg.FFmpeg, append(args, "-flush_packets", "1", "pipe:1")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out := &flushWriter{dst: dst}
	if format == "wav" {
		out.header = wavHeaderAt(-1, req.rate())
	}
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		s.log.Error("ffmpeg did not start", "err", err, "request_id", requestID(ctx))
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "encoder_failed",
			Message: fmt.Sprintf("the %s encoder (ffmpeg) could not start (request %s; the server log has the details): wav and pcm need no encoder", format, requestID(ctx))}
	}
	streamErr, inputErr := feed(stdin, stream, obs)
	waitErr := cmd.Wait()
	switch {
	case streamErr != nil: // the engine failed
		return streamErr
	case out.err != nil: // the client went away or stopped reading: ffmpeg lost its output
		return out.err
	case ctx.Err() != nil: // the request ended: ffmpeg was stopped with it
		return ctx.Err()
	case waitErr != nil || inputErr != nil: // the encoder failed (a broken pipe means it exited early)
		reason := firstLine(stderr.String())
		s.log.Error("ffmpeg failed", "format", format, "err", errors.Join(waitErr, inputErr), "stderr", stderr.String(), "request_id", requestID(ctx))
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "encoder_failed",
			Message: fmt.Sprintf("ffmpeg could not encode %s: %s (request %s; wav and pcm need no encoder)", format, reason, requestID(ctx))}
	}
	return nil
}

// firstLine is the first line of an encoder's complaint, without local
// paths.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if line == "" {
		return "it exited with an error"
	}
	return scrubPaths(line)
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

// flushWriter writes encoder output to the reply, flushing as it goes,
// after header when one is set (a WAV's, sent with the first bytes), and
// keeps the first write that failed.
type flushWriter struct {
	dst    sink
	header []byte
	err    error
}

func (f *flushWriter) Write(p []byte) (int, error) {
	if f.header != nil {
		if _, err := f.dst.Write(f.header); err != nil {
			if f.err == nil {
				f.err = err
			}
			return 0, err
		}
		f.header = nil
	}
	n, err := f.dst.Write(p)
	f.dst.Flush()
	if err != nil && f.err == nil {
		f.err = err
	}
	return n, err
}
