package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
// the engine's words, busy and not ready are 503 with Retry-After, a failed
// engine is a 503 naming the failure (the engine is being restarted).
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
		return unavailable("engine_not_ready", 5*time.Second, "%v", err)
	}
	return unavailable("engine_failed", 5*time.Second, "%v (the engine is being restarted; retry shortly)", err)
}

// clientClosed is the answer logged for a request whose client left before
// its reply: nginx's 499, which no client sees.
func clientClosed() *apiError {
	return &apiError{Status: 499, Type: "client_closed", Code: "client_closed", Message: "client closed the request"}
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	var param any
	if e.Param != "" {
		param = e.Param
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": e.Message, "type": e.Type, "param": param, "code": e.Code,
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
