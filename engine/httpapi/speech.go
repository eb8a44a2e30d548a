package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/prompt"
	"github.com/drama-tts/drama/engine/supervise"
	"github.com/drama-tts/drama/voices"
)

// handleSpeech is POST /v1/audio/speech: check, queue, synthesize, reply.
func (s *Server) handleSpeech(w http.ResponseWriter, r *http.Request) {
	rec := &Recorder{ResponseWriter: w}
	start := time.Now()
	defer func() { s.metrics.observeRequest(rec.Status()) }()
	if e := s.notQualified(); e != nil {
		writeError(rec, e)
		return
	}
	req, e := s.readSpeech(rec, r)
	if e != nil {
		writeError(rec, e)
		return
	}
	if len(req.References) > 0 {
		if e := s.inlineReferences(r.Context()); e != nil {
			writeError(rec, e)
			return
		}
	}
	s.speak(rec, r, req, start)
}

// speak runs a checked speech request, whichever route it came by: the
// clone it names resolved, its prompt counted, a turn in the queue, the
// synthesis, and the reply as the request asked for it. Every refusal goes
// through req.refusal, so each route answers in its own terms.
func (s *Server) speak(rec *Recorder, r *http.Request, req *speech, start time.Time) {
	req.RequestID = requestID(r.Context())
	if !r.ProtoAtLeast(1, 1) {
		// HTTP/1.0 has no chunked bodies: a streamed reply could only end
		// with a close, which looks the same whether the synthesis
		// finished or failed. It gets a whole reply.
		req.Whole, req.Stream = true, false
	}
	turn, lease, release, stream, e := s.begin(r.Context(), rec.Header(), req)
	if e != nil {
		writeError(rec, e)
		return
	}
	defer release()
	defer stream.Close()
	s.reply(r.Context(), rec, req, stream, start, turn, lease)
}

// begin takes a checked request to its synthesis: the clone it names
// resolved, its prompt counted, a turn in the queue (a restart that loads
// a clone noted in h), and the engine's stream. The caller releases the
// engine and closes the stream; e is the answer to a request that did not
// get that far, in the route's terms.
func (s *Server) begin(ctx context.Context, h http.Header, req *speech) (turn time.Time, lease *pool.Lease, release func(), stream engine.AudioStream, e *apiError) {
	load, e := s.resolveClone(ctx, req)
	if e != nil {
		return turn, nil, nil, nil, req.refusal(e)
	}
	if e := s.checkPrompt(req); e != nil {
		return turn, nil, nil, nil, req.refusal(e)
	}
	limit := s.cfg.QueueTimeout
	if st := s.status(); !st.Ready {
		if s.cfg.ReadyWait <= 0 {
			return turn, nil, nil, nil, notReady(st)
		}
		// wait in the queue as any request does, but only ReadyWait
		limit = min(limit, s.cfg.ReadyWait)
	}
	queued := time.Now()
	lease, release, e = s.waitTurn(ctx, voiceKey(req.SynthesisRequest), limit)
	if e != nil {
		return turn, nil, nil, nil, e
	}
	reportQueueWait(ctx, time.Since(queued))
	if load != "" {
		if e := s.loadForSpeech(ctx, h, load); e != nil {
			release()
			return turn, nil, nil, nil, e
		}
	}
	turn = time.Now()
	stream, err := lease.Engine().Synthesize(ctx, req.SynthesisRequest)
	if err != nil {
		e := req.refusal(s.engineError(ctx, err, lease))
		release()
		return turn, nil, nil, nil, e
	}
	return turn, lease, release, stream, nil
}

// voiceKey names what an engine's prefix cache holds for a request: its
// voice and its references, the prefix the engine prefills before the
// text. The same voice gives the same key.
func voiceKey(req engine.SynthesisRequest) string {
	if len(req.References) == 0 {
		return "voice:" + req.Voice
	}
	h := sha256.New()
	var buf []byte
	for _, r := range req.References {
		fmt.Fprintf(h, "%d:%s", len(r.Text), r.Text)
		for _, row := range r.Codes {
			buf = buf[:0]
			for _, c := range row {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(int32(c)))
			}
			h.Write(append(buf, 0xff))
		}
	}
	return "voice:" + req.Voice + "+refs:" + hex.EncodeToString(h.Sum(nil)[:12])
}

func (s *Server) readSpeech(w http.ResponseWriter, r *http.Request) (*speech, *apiError) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return nil, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error", Code: "unsupported_media_type",
			Message: "send the request as JSON (Content-Type: application/json)"}
	}
	body, e := readBody(w, r, MaxBodyBytes, "")
	if e != nil {
		return nil, e
	}
	return s.parseSpeech(body)
}

// readBody reads a request's whole body, at most limit bytes: a longer
// one is a 413 body_too_large saying the limit and then advice (when not
// empty), what to send instead.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, advice string) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			msg := fmt.Sprintf("request body is over %d bytes", limit)
			if advice != "" {
				msg += ": " + advice
			}
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "body_too_large", Message: msg}
		}
		return nil, badRequest("", "reading the request body: %v", err)
	}
	return body, nil
}

// waitTurn queues the request for an engine (one that holds voice, a
// voiceKey, first) for at most limit, recording how long it waited and,
// once it is done, how long it held the engine. A request turned away
// while no engine is ready is told so (engine_not_ready).
func (s *Server) waitTurn(ctx context.Context, voice string, limit time.Duration) (lease *pool.Lease, release func(), e *apiError) {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	arrived := time.Now()
	lease, err := s.pool.Acquire(wctx, voice)
	switch {
	case err == nil:
		got := time.Now()
		s.metrics.observeQueueWait(got.Sub(arrived))
		return lease, func() { s.metrics.hold.add(time.Since(got)); lease.Release() }, nil
	case errors.Is(err, pool.ErrDraining):
		return nil, nil, s.draining()
	case ctx.Err() != nil:
		return nil, nil, clientClosed()
	}
	if st := s.status(); !st.Ready || errors.Is(err, pool.ErrNoEngine) {
		return nil, nil, notReady(st)
	}
	if errors.Is(err, pool.ErrQueueFull) {
		return nil, nil, unavailable("queue_full", s.retryAfter(), "%d requests are already waiting for the engine: retry later", s.pool.Options().MaxQueue)
	}
	return nil, nil, unavailable("queue_timeout", s.retryAfter(), "waited %v for the engine without a turn: retry later", limit)
}

// notReady is the 503 of a request turned away while no engine is ready
// (st is the engines' state then).
func notReady(st supervise.Status) *apiError {
	return unavailable("engine_not_ready", 5*time.Second, "the engine is not ready (%s): GET /ready tells when it is", st.Phase)
}

// retryAfter estimates when a place in the queue frees up: the places
// ahead times the measured time the queue takes to move one place (one
// engine's hold shared by the engines that serve).
func (s *Server) retryAfter() time.Duration {
	return max(time.Second, time.Duration(s.pool.Depth()+1)*s.metrics.hold.value()/time.Duration(max(s.pool.Ready(), 1)))
}

// engineError maps an engine error and reports a failed engine to the
// lease's supervisor. What the engine said (its output, local paths) is
// logged under the request id and never sent.
func (s *Server) engineError(ctx context.Context, err error, lease *pool.Lease) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if e := clientGone(ctx); e != nil {
		return e // not the engine's doing: it is not reported failed
	}
	if errors.Is(err, context.Canceled) {
		return clientClosed()
	}
	if kind, _ := engine.KindOf(err); kind == engine.KindFailed || kind == engine.KindNotReady {
		lease.Failed(err) // a not-ready engine behind a ready status has died
	}
	e := fromEngine(err)
	if e.Detail != nil {
		s.logDetail(requestID(ctx), e.Detail)
		e.Detail = nil
		e.Message = withRequestID(e.Message, requestID(ctx))
	}
	return e
}

// reply sends the audio in the form the request asked for.
func (s *Server) reply(ctx context.Context, w *Recorder, req *speech, stream engine.AudioStream, start, turn time.Time, lease *pool.Lease) {
	h := w.Header()
	h.Set("X-Sample-Rate", strconv.Itoa(req.rate()))
	h.Set("X-Audio-Format", "s16le;channels=1")
	obs := &observer{s: s, start: start, turn: turn}
	var err error
	if req.Whole {
		err = s.replyWhole(ctx, w, req, stream, obs)
	} else {
		err = s.replyStreamed(ctx, w, req, stream, obs)
	}
	if err != nil {
		s.failedMidway(ctx, w, req, err, lease)
	}
	obs.done(stream.Final())
}

// failedMidway ends a reply whose synthesis failed. Before any byte was
// sent it answers an error; after, it aborts the connection so the chunked
// body ends without its terminating chunk (an SSE stream first gets an
// error event, which OpenAI's SDKs raise), and counts and logs the cut by
// its cause: the engine's or the encoder's failure, or the client's (it
// stopped reading, or went away), which is not reported as the engine's.
func (s *Server) failedMidway(ctx context.Context, w *Recorder, req *speech, err error, lease *pool.Lease) {
	if !w.wroteHeader {
		for _, k := range []string{"Trailer", "Cache-Control", "Content-Length", "Content-Type"} {
			w.Header().Del(k) // set for the audio that never came
		}
		writeError(w, req.refusal(s.engineError(ctx, err, lease)))
		return
	}
	e := clientGone(ctx)
	if e == nil && w.failed != nil {
		e = clientClosed() // the connection failed before its context ended
	}
	if e == nil {
		e = s.engineError(ctx, err, lease)
	}
	s.replyCut(ctx, w, e.Code)
	if req.SSE && e.Status != 499 {
		_ = writeEvent(w, map[string]any{"type": "error", "error": errorBody(e)})
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
	n, err := s.cfg.Prompt.Count(text, refs)
	var tooLong *prompt.TooLongError
	switch {
	case err == nil:
		req.PromptTokens = n
		return nil
	case errors.As(err, &tooLong):
		return badRequest("input", "the prompt is %d tokens; the model takes at most %d: shorten the input or use fewer references", tooLong.Tokens, tooLong.Max)
	default:
		return badRequest("input", "%v", err)
	}
}
