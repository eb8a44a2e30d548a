package native

import (
	"errors"
	"fmt"
)

// Sentinel errors of the contract client. StatusError matches the first
// three with errors.Is, by status code.
var (
	// ErrInvalid: the server refused the request (400); the message is the
	// server's own.
	ErrInvalid = errors.New("native: invalid request")
	// ErrBusy: the server still answered 503 busy after the retry window.
	ErrBusy = errors.New("native: server busy")
	// ErrServer: the server answered 500 or another unexpected status.
	ErrServer = errors.New("native: server error")
	// ErrTruncated: the body ended before it was complete (a stream without
	// its terminating chunk, a WAV shorter than its header says).
	ErrTruncated = errors.New("native: reply ended before it was complete")
	// ErrProtocol: the reply does not follow the HTTP contract.
	ErrProtocol = errors.New("native: protocol error")
	// ErrUnreachable: no connection to the server could be made.
	ErrUnreachable = errors.New("native: server not reachable")
)

// StatusError is a reply with a status other than 200.
type StatusError struct {
	Code    int    // HTTP status
	Message string // the server's words
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("native: server answered %d: %s", e.Code, e.Message)
}

// Is matches ErrInvalid for 400, ErrBusy for 503 and ErrServer otherwise.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrInvalid:
		return e.Code == 400
	case ErrBusy:
		return e.Code == 503
	case ErrServer:
		return e.Code != 400 && e.Code != 503
	}
	return false
}
