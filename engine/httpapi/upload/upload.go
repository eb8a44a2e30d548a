// Package upload receives a request's body before the request takes a
// place that other requests wait for (the one clone slot of drama serve,
// the one clip check of its page). The body comes under a byte limit, a
// stall timeout between bytes and a deadline for the whole of it, and is
// written to disk by the caller; only then does the request wait, a
// bounded time, for its Slot. A client that sends slowly holds its own
// connection until the deadline, never the slot.
package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// DefaultTimeout is the deadline for a whole body when Limits.Timeout is 0
// (drama serve --upload-timeout).
const DefaultTimeout = 2 * time.Minute

// DefaultStall is the longest wait for the next bytes of a body when
// Limits.Stall is 0.
const DefaultStall = 10 * time.Second

// Limits bound the receiving of one body.
type Limits struct {
	// MaxBytes bounds the body: a read past it fails with an
	// *http.MaxBytesError.
	MaxBytes int64
	// Stall is the longest wait for the next bytes (default DefaultStall).
	Stall time.Duration
	// Timeout is how long the whole body may take from Receive on
	// (default DefaultTimeout).
	Timeout time.Duration
}

// Error is a read of a Body that passed one of its time limits. It wraps
// the connection's error (os.ErrDeadlineExceeded).
type Error struct {
	// Timeout: the whole body did not come within Limits.Timeout; else no
	// bytes came within Limits.Stall.
	Timeout bool
	// Limit is the limit passed.
	Limit time.Duration
	err   error
}

// Error says which limit passed and the flag that sets it.
func (e *Error) Error() string {
	if e.Timeout {
		return fmt.Sprintf("the upload did not arrive whole within %v (drama serve --upload-timeout): send it over a faster link, or raise --upload-timeout", e.Limit)
	}
	return fmt.Sprintf("the upload stopped: no bytes came within %v (drama serve --stall-timeout)", e.Limit)
}

// Unwrap returns the connection's error.
func (e *Error) Unwrap() error { return e.err }

// Code is the error's code in an API reply: upload_timeout or
// upload_stalled.
func (e *Error) Code() string {
	if e.Timeout {
		return "upload_timeout"
	}
	return "upload_stalled"
}

// Body is a request's body read under Limits. Each read sets the
// connection's read deadline to the sooner of the stall timeout and the
// whole body's deadline.
type Body struct {
	rc       *http.ResponseController
	body     io.ReadCloser
	lim      Limits
	deadline time.Time
	err      *Error // the limit a read passed
	eof      bool
}

// Receive puts r's body under lim from now on; read r.Body as usual.
func Receive(w http.ResponseWriter, r *http.Request, lim Limits) *Body {
	if lim.Stall <= 0 {
		lim.Stall = DefaultStall
	}
	if lim.Timeout <= 0 {
		lim.Timeout = DefaultTimeout
	}
	b := &Body{rc: http.NewResponseController(w), body: r.Body, lim: lim, deadline: time.Now().Add(lim.Timeout)}
	r.Body = http.MaxBytesReader(w, b, lim.MaxBytes)
	return b
}

// Read reads the body under the sooner of the two deadlines; a read that
// passes one fails with an *Error. Once the body has ended no deadline is
// set again: net/http then watches the connection with a read of its own,
// to tell when the client goes away, and a deadline would fail that read
// and cancel the request's context while it waits for its slot or works.
func (b *Body) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	d, whole := time.Now().Add(b.lim.Stall), false
	if !d.Before(b.deadline) {
		d, whole = b.deadline, true
	}
	_ = b.rc.SetReadDeadline(d)
	n, err := b.body.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		e := &Error{Timeout: whole, Limit: b.lim.Stall, err: err}
		if whole {
			e.Limit = b.lim.Timeout
		}
		b.err = e
		return n, e
	}
	b.eof = err == io.EOF
	return n, err
}

// Err is the *Error of the time limit a read passed, nil if none did. A
// reader above the body may not pass the error on as it came (a multipart
// part's header cut short reads as malformed): ask Err first.
func (b *Body) Err() *Error { return b.err }

// Close closes the request's body.
func (b *Body) Close() error { return b.body.Close() }

// ErrBusy is Slot.Take's error when the slot stayed taken for the whole
// wait.
var ErrBusy = errors.New("the slot stayed taken for the whole wait")

// Slot is a place one request holds at a time, taken once its upload is
// received. It keeps a moving mean of how long a holder keeps it: the
// Retry-After of a request turned away.
type Slot struct {
	ch chan struct{}

	mu   sync.Mutex
	mean time.Duration
	n    int
}

// NewSlot returns a free slot whose hold is guessed at first before any is
// measured.
func NewSlot(first time.Duration) *Slot {
	return &Slot{ch: make(chan struct{}, 1), mean: first}
}

// Take takes the slot, waiting at most wait for it (0 or less: not at all).
// It fails with ErrBusy when the wait ends first and with ctx's error when
// ctx ends first. release gives the slot back and measures the hold.
func (s *Slot) Take(ctx context.Context, wait time.Duration) (release func(), err error) {
	select {
	case s.ch <- struct{}{}:
		return s.releaser(), nil
	default:
	}
	if wait <= 0 {
		return nil, ErrBusy
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s.ch <- struct{}{}:
		return s.releaser(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, ErrBusy
	}
}

func (s *Slot) releaser() func() {
	began := time.Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.measure(time.Since(began))
			<-s.ch
		})
	}
}

// measure folds a hold into the mean of about the last 16.
func (s *Slot) measure(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		s.mean = d
	} else {
		s.mean += (d - s.mean) / time.Duration(min(s.n+1, 16))
	}
	s.n++
}

// Hold is how long a holder keeps the slot, on the mean: how long a request
// turned away should wait before it tries again.
func (s *Slot) Hold() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mean
}
