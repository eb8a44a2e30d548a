package httpapi

import (
	"context"
	"time"
)

type queueWaitKey struct{}

// WithQueueWait returns a context for a request to POST /v1/audio/speech
// under which the server calls fn once with the time the request waited in
// the queue for the engine, when it gets its turn. An access log wraps the
// handler and sets it.
func WithQueueWait(ctx context.Context, fn func(time.Duration)) context.Context {
	return context.WithValue(ctx, queueWaitKey{}, fn)
}

func reportQueueWait(ctx context.Context, d time.Duration) {
	if fn, ok := ctx.Value(queueWaitKey{}).(func(time.Duration)); ok && fn != nil {
		fn(d)
	}
}

// Outcome is how the server ended a request's reply, beyond its status:
// once a reply's status (200) and first bytes went out, a failure can only
// cut the reply short, and the status no longer tells.
type Outcome struct {
	// Code is the error code of an error reply, or the cause of a reply
	// cut short: engine_failed, encoder_failed, client_stalled (the
	// client accepted no audio within the stall timeout), client_closed
	// (the client went away); empty for a reply without an error.
	Code string
	// Cut is set when the reply began and was cut short: the client got
	// part of it, under status 200.
	Cut bool
}

type outcomeKey struct{}

// WithOutcome returns a context for a request under which the server calls
// fn once with the reply's outcome, when its handler is done (a reply cut
// short included). An access log wraps the handler and sets it.
func WithOutcome(ctx context.Context, fn func(Outcome)) context.Context {
	return context.WithValue(ctx, outcomeKey{}, fn)
}

func reportOutcome(ctx context.Context, o Outcome) {
	if fn, ok := ctx.Value(outcomeKey{}).(func(Outcome)); ok && fn != nil {
		fn(o)
	}
}

// replyCut records a reply cut short after it began, by its cause (the
// error code): the counter of cut replies, the outcome the access log
// reads, and a log line that names the cause.
func (s *Server) replyCut(ctx context.Context, w *Recorder, code string) {
	s.metrics.observeCut(code)
	if t := findTraced(w); t != nil {
		t.outcome = Outcome{Code: code, Cut: true}
	}
	attrs := []any{"request_id", requestID(ctx), "after_bytes", w.written, "code", code}
	switch code {
	case "client_stalled":
		s.log.Warn("the client accepted no audio within the stall timeout: its reply is cut short", attrs...)
	case "client_closed":
		s.log.Info("the client went away during its reply: the reply is cut short", attrs...)
	default:
		s.log.Warn("synthesis failed after its reply began: the reply is cut short", attrs...)
	}
}
