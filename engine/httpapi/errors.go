package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/drama-tts/drama/engine"
)

// apiError is an error answered as OpenAI-style JSON.
type apiError struct {
	Status     int
	Message    string
	Type       string // invalid_request_error, server_error, ...
	Param      string
	Code       string
	RetryAfter time.Duration
	// Detail is what went wrong inside (the engine's words and output, with
	// local paths): logged under the request id, never sent.
	Detail error
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: "invalid_" + paramCode(param), Message: fmt.Sprintf(format, args...)}
}

func paramCode(param string) string {
	if param == "" {
		return "request"
	}
	return param
}

func unavailable(code string, retry time.Duration, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: code, RetryAfter: retry, Message: fmt.Sprintf(format, args...)}
}

// fromEngine maps an engine error onto the API: invalid input is a 400 in
// the engine's words, busy and not ready are 503s with Retry-After (the
// request did not run), and a failed engine is a 500 with Retry-After that
// says what happens next; what the engine said
// then (its output, local paths) becomes the Detail, for the log only.
func fromEngine(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	kind, _ := engine.KindOf(err)
	switch kind {
	case engine.KindInvalid:
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_input", Message: err.Error()}
	case engine.KindBusy:
		return unavailable("engine_busy", time.Second, "%v", err)
	case engine.KindNotReady:
		e := unavailable("engine_not_ready", 5*time.Second, "the engine is not ready: GET /ready tells when it is")
		e.Detail = err
		return e
	}
	// a 500, not a 503: every 503 says that nothing of the request ran
	// here, so that a balancer may send it on to another host, and a text
	// that crashed this engine must not be sent on to crash the next
	e := &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "engine_failed", RetryAfter: 5 * time.Second,
		Message: "the engine failed during this request; drama serve checks it and restarts it if needed: retry shortly"}
	e.Detail = err
	return e
}

// withRequestID adds the request id to a message whose details are in the
// server's log.
func withRequestID(msg, id string) string {
	if id == "" {
		return msg
	}
	return fmt.Sprintf("%s (request %s: the server log has the details)", msg, id)
}

// logDetail logs what went wrong inside a request, the engine's output
// included, under the request id.
func (s *Server) logDetail(id string, err error) {
	attrs := []any{"request_id", id, "err", err}
	var ee *engine.Error
	if errors.As(err, &ee) && ee.LogTail != "" {
		attrs = append(attrs, "engine_output", ee.LogTail)
	}
	s.log.Error("request failed", attrs...)
}

// scrubPaths replaces absolute file paths in a line meant for a client.
var pathPattern = regexp.MustCompile(`(^|[\s'"(=])/[^\s'":,)]+`)

func scrubPaths(line string) string { return pathPattern.ReplaceAllString(line, "${1}<path>") }

// traced is the writer each request starts with: it keeps the Detail of an
// error answered deep inside a handler, so the error is logged under the
// request id once the handler returns, and the reply's outcome (the code of
// the error answered, or the cause of a reply cut short) for the access log.
type traced struct {
	http.ResponseWriter
	detail  error
	outcome Outcome
}

// Flush sends what is buffered.
func (t *traced) Flush() { _ = t.FlushError() }

// FlushError sends what is buffered and returns the connection's error, so
// http.ResponseController.Flush (and the stall cut above it) sees a write
// that timed out rather than taking it for a success.
func (t *traced) FlushError() error {
	return http.NewResponseController(t.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (t *traced) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func findTraced(w http.ResponseWriter) *traced {
	for {
		switch x := w.(type) {
		case *traced:
			return x
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}

// clientClosed is the answer logged for a request whose client left before
// its reply: nginx's 499, which no client sees.
func clientClosed() *apiError {
	return &apiError{Status: 499, Type: "client_closed", Code: "client_closed", Message: "client closed the request"}
}

// clientStalled is the answer logged for a request whose client accepted
// no part of its reply within the stall timeout and was cut: a 499 as
// clientClosed, with the client named as the cause.
func clientStalled() *apiError {
	return &apiError{Status: 499, Type: "client_closed", Code: "client_stalled", Message: errClientStalled.Error()}
}

// clientGone is the answer for a request whose client is gone, nil while
// it is there: client_stalled when the stall rule cut it, client_closed
// when it went away. Whatever failed then (the engine's stream cancelled
// with the request, a write to the connection) followed from it.
func clientGone(ctx context.Context) *apiError {
	switch {
	case cutForStall(ctx) || errors.Is(context.Cause(ctx), errClientStalled):
		return clientStalled()
	case ctx.Err() != nil:
		return clientClosed()
	}
	return nil
}

func writeError(w http.ResponseWriter, e *apiError) {
	t := findTraced(w)
	if t != nil {
		t.outcome.Code = e.Code
	}
	if e.Detail != nil {
		cp := *e
		cp.Message = withRequestID(e.Message, w.Header().Get("X-Request-Id"))
		cp.Detail = nil
		if t != nil {
			t.detail = e.Detail
		}
		e = &cp
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": errorBody(e)})
}

// errorBody is the OpenAI error object: message, type, param (null when no
// field is at fault) and code.
func errorBody(e *apiError) map[string]any {
	var param any
	if e.Param != "" {
		param = e.Param
	}
	return map[string]any{"message": e.Message, "type": e.Type, "param": param, "code": e.Code}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// jsonNotFound answers what mux has no route for as OpenAI-style JSON: 404
// for an unknown path, 405 with Allow for a known path and another method.
func jsonNotFound(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		probe := &statusProbe{header: http.Header{}}
		h.ServeHTTP(probe, r) // the mux's own answer: 404, 405 with Allow, or a redirect
		switch probe.status {
		case http.StatusNotFound:
			writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "not_found",
				Message: fmt.Sprintf("no route %s %s: the API is under /v1 (POST /v1/audio/speech, GET /v1/models, GET /v1/voices)", r.Method, r.URL.Path)})
		case http.StatusMethodNotAllowed:
			allow := probe.header.Get("Allow")
			w.Header().Set("Allow", allow)
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: "method_not_allowed",
				Message: fmt.Sprintf("%s %s is not allowed: use %s", r.Method, r.URL.Path, allow)})
		default:
			mux.ServeHTTP(w, r)
		}
	})
}

// statusProbe records the status and headers a handler answers with and
// discards its body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }

func (p *statusProbe) WriteHeader(code int) {
	if p.status == 0 {
		p.status = code
	}
}

func (p *statusProbe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}
