package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/prompt"
	"github.com/drama-tts/drama/voices"
)

// handleSpeech is POST /v1/audio/speech: check, queue, synthesize, reply.
func (s *Server) handleSpeech(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w}
	start := time.Now()
	defer func() { s.metrics.observeRequest(rec.code()) }()
	req, e := s.readSpeech(rec, r)
	if e != nil {
		writeError(rec, e)
		return
	}
	req.RequestID = requestID(r.Context())
	if e := s.resolveClone(r.Context(), req); e != nil {
		writeError(rec, e)
		return
	}
	if e := s.checkPrompt(req); e != nil {
		writeError(rec, e)
		return
	}
	if st := s.status(); !st.Ready {
		writeError(rec, unavailable("engine_not_ready", 5*time.Second, "the engine is not ready (%s): GET /ready tells when it is", st.Phase))
		return
	}
	queued := time.Now()
	release, e := s.waitTurn(r.Context())
	if e != nil {
		writeError(rec, e)
		return
	}
	defer release()
	reportQueueWait(r.Context(), time.Since(queued))
	stream, err := s.synthesize(r.Context(), req.SynthesisRequest)
	if err != nil {
		writeError(rec, s.engineError(err))
		return
	}
	defer stream.Close()
	s.reply(rec, r.Context(), req, stream, start)
}

func (s *Server) readSpeech(w http.ResponseWriter, r *http.Request) (*speech, *apiError) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return nil, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error", Code: "unsupported_media_type",
			Message: "send the request as JSON (Content-Type: application/json)"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "body_too_large",
				Message: fmt.Sprintf("request body is over %d bytes", MaxBodyBytes)}
		}
		return nil, badRequest("", "reading the request body: %v", err)
	}
	return parseSpeech(body, s)
}

// waitTurn queues the request for the engine's slot.
func (s *Server) waitTurn(ctx context.Context) (release func(), e *apiError) {
	wctx, cancel := context.WithTimeout(ctx, s.cfg.QueueTimeout)
	defer cancel()
	err := s.queue.acquire(wctx)
	switch {
	case err == nil:
		return s.queue.release, nil
	case errors.Is(err, errQueueFull):
		return nil, unavailable("queue_full", s.retryAfter(), "%d requests are already waiting for the engine: retry later", s.cfg.MaxQueue)
	case ctx.Err() != nil:
		return nil, clientClosed()
	default:
		return nil, unavailable("queue_timeout", s.retryAfter(), "waited %v for the engine without a turn: retry later", s.cfg.QueueTimeout)
	}
}

// retryAfter estimates when a place in the queue frees up.
func (s *Server) retryAfter() time.Duration {
	return max(time.Second, time.Duration(s.queue.depth()+1)*s.metrics.meanSynthesis())
}

// synthesize starts a synthesis, retrying the engine's busy answer every
// 50 ms for up to BusyRetry, so clients never see the engine's short busy
// window after a cancel.
func (s *Server) synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	deadline := time.Now().Add(s.cfg.BusyRetry)
	for {
		stream, err := s.cfg.Engine.Synthesize(ctx, req)
		if err == nil || !engine.IsBusy(err) || time.Now().After(deadline) {
			return stream, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// engineError maps an engine error and reports a failed engine.
func (s *Server) engineError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, context.Canceled) {
		return clientClosed()
	}
	if kind, _ := engine.KindOf(err); (kind == engine.KindFailed || kind == engine.KindNotReady) && s.cfg.Failures != nil {
		s.cfg.Failures.EngineFailed(err) // a not-ready engine behind a ready status has died
	}
	return fromEngine(err)
}

// reply sends the audio in the form the request asked for.
func (s *Server) reply(w *statusRecorder, ctx context.Context, req *speech, stream engine.AudioStream, start time.Time) {
	h := w.Header()
	h.Set("X-Sample-Rate", strconv.Itoa(engine.SampleRate))
	h.Set("X-Audio-Format", "s16le;channels=1")
	obs := &observer{s: s, start: start}
	var err error
	switch {
	case req.SSE:
		err = s.replySSE(w, stream, obs)
	case req.Format != "wav" && req.Format != "pcm":
		err = s.replyEncoded(w, ctx, req.Format, stream, obs)
	case req.Stream:
		err = s.replyStream(w, req.Format, stream, obs)
	default:
		err = s.replyWhole(w, req.Format, stream, obs)
	}
	if err != nil {
		s.failedMidway(w, err)
	}
	obs.done(stream.Final())
}

// failedMidway ends a reply whose synthesis failed. Before any byte was
// sent it answers an error; after, it aborts the connection so the chunked
// body ends without its terminating chunk.
func (s *Server) failedMidway(w *statusRecorder, err error) {
	s.log.Warn("synthesis failed", "err", err, "after_bytes", w.written)
	if !w.wroteHeader {
		for _, k := range []string{"Trailer", "Cache-Control", "Content-Length"} {
			w.Header().Del(k) // set for the audio that never came
		}
		writeError(w, s.engineError(err))
		return
	}
	var ae *apiError
	if kind, _ := engine.KindOf(err); kind == engine.KindFailed && s.cfg.Failures != nil && !errors.Is(err, context.Canceled) && !errors.As(err, &ae) {
		s.cfg.Failures.EngineFailed(err)
	}
	panic(http.ErrAbortHandler)
}

func finishHeaders(h http.Header, f engine.Final) {
	if r := f.Reason.String(); r != "" {
		h.Set("X-Finish-Reason", r)
	}
	if f.LongFormSegments > 1 {
		h.Set("X-Long-Form-Segments", longFormValue(f))
	}
}

// longFormValue is "N;S2,S3,...": the segment count and the sample offsets
// at which segments 2..N begin.
func longFormValue(f engine.Final) string {
	offs := make([]string, len(f.SegmentOffsets))
	for i, o := range f.SegmentOffsets {
		offs[i] = strconv.FormatInt(o, 10)
	}
	return strconv.Itoa(f.LongFormSegments) + ";" + strings.Join(offs, ",")
}

// statusRecorder remembers what was written, for metrics and for deciding
// how a failure can still be reported.
type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	written     int64
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	return n, err
}

func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusRecorder) code() int {
	if !w.wroteHeader {
		return http.StatusOK
	}
	return w.status
}

// checkPrompt counts the prompt the engine will build (the direction, the
// text and the request's references; an engine voice's own references are
// the engine's) and refuses one longer than the model takes.
func (s *Server) checkPrompt(req *speech) *apiError {
	if s.cfg.Prompt == nil {
		return nil
	}
	text := req.Input
	if req.Instructions != "" {
		text = "[" + req.Instructions + "] " + text
	}
	refs := make([]voices.Reference, len(req.References))
	for i, r := range req.References {
		refs[i] = voices.Reference{Text: r.Text, Codes: r.Codes}
	}
	_, err := s.cfg.Prompt.Count(text, refs)
	var tooLong *prompt.TooLongError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooLong):
		return badRequest("input", "the prompt is %d tokens; the model takes at most %d: shorten the input or use fewer references", tooLong.Tokens, tooLong.Max)
	default:
		return badRequest("input", "%v", err)
	}
}
