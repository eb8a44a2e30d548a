package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// DefaultStallTimeout is how long a client may accept no part of its reply
// before it is cut.
const DefaultStallTimeout = 10 * time.Second

// stallPiece is the most written to the connection under one deadline: a
// client that takes a whole stall timeout to accept this much has stopped
// reading.
const stallPiece = 16 << 10

// replyUnsent bounds what of a streamed reply waits in the kernel unsent
// (TCP_NOTSENT_LOWAT, on Linux): the audio the engine may make ahead of
// what the client has taken, past what the client's own receive window
// took. A client that stops reading closes its window, so the reply's
// writes block, and the stall timeout starts, once this much more lies
// unsent: 16 KiB, 0.09 s of audio, 5 ms of an engine at 20 times real
// time. Bytes sent and waiting for the client's acknowledgement do not
// count, so a client that reads is never held up by a delayed
// acknowledgement, as a small send buffer would hold it (a 64 KiB buffer
// made a 0.65 MB streamed reply to a client on the same host 35 ms
// slower), and a fast link keeps as much in flight as it carries.
const replyUnsent = 16 << 10

// replyWindow bounds the kernel's send buffer of a streamed reply's
// connection where replyUnsent cannot be set: left to the kernel, the
// buffer grows to megabytes on a fast link (2.8 MB on loopback: 1.6 s of
// audio from an engine at 20 times real time, before the timeout even
// starts). Linux doubles the value, so 128 KiB: 0.74 s of audio. Not
// less: loopback sends segments of 64 KiB, and a buffer that holds less
// than two waits for the client's delayed acknowledgement.
const replyWindow = 64 << 10

// errClientStalled is the cause given to a request's context when its
// client stopped reading.
var errClientStalled = errors.New("the client accepted no audio within the stall timeout")

// withStallCut gives every write to a reply a deadline: a client that
// accepts no piece of its reply for StallTimeout is cut, the request's
// context is cancelled (which cancels its synthesis and frees the engine),
// and the cut is counted in the metrics.
func (s *Server) withStallCut(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		sw := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: s.cfg.StallTimeout, cancel: cancel, onStall: s.clientStalled}
		ctx = context.WithValue(ctx, stallKey{}, sw)
		// Armed from the start (a deadline left by an earlier request on
		// the connection must not cut this one), and still armed after the
		// handler returns, so the last bytes net/http writes are bounded too.
		sw.arm()
		defer sw.arm()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

func (s *Server) clientStalled() {
	s.metrics.stalled.Add(1)
}

type stallKey struct{}

type connKey struct{}

// ConnContext records a connection in the context of its requests, so that
// a reply streamed on it can bound what it leaves unsent (see replyUnsent): set
// it as the ConnContext of the http.Server that serves Handler. Without
// it, replies leave the buffer to the kernel.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// boundSendBuffer bounds what waits unsent on the connection of ctx to
// replyUnsent, or where the kernel offers no such bound its send buffer to
// replyWindow, through the wrappers that offer NetConn (as tls.Conn does).
func boundSendBuffer(ctx context.Context) {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	if boundUnsent(c, replyUnsent) {
		return
	}
	if b, ok := c.(interface{ SetWriteBuffer(int) error }); ok {
		_ = b.SetWriteBuffer(replyWindow)
	}
}

// cutForStall tells whether the stall rule cut the client of the request
// of ctx. The request's context alone cannot tell: net/http cancels it
// when a write to the connection fails, before the cut gives its cause.
func cutForStall(ctx context.Context) bool {
	sw, ok := ctx.Value(stallKey{}).(*stallWriter)
	return ok && sw.stalled.Load()
}

// stallWriter is a ResponseWriter whose writes each get StallTimeout.
type stallWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	cancel  context.CancelCauseFunc
	onStall func()
	stalled atomic.Bool // set once, by the write that timed out
}

func (w *stallWriter) arm() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
}

// Write writes p in pieces of at most stallPiece bytes, each under a fresh
// deadline, so a slow client that keeps reading is never cut but one that
// stops is.
func (w *stallWriter) Write(p []byte) (int, error) {
	var n int
	for len(p) > 0 || n == 0 {
		piece := p[:min(len(p), stallPiece)]
		w.arm()
		m, err := w.ResponseWriter.Write(piece)
		n += m
		if err != nil {
			w.failed(err)
			return n, err
		}
		p = p[len(piece):]
		if len(p) == 0 {
			break
		}
	}
	return n, nil
}

// Flush sends what is buffered under a fresh deadline.
func (w *stallWriter) Flush() {
	w.arm()
	if err := w.rc.Flush(); err != nil {
		w.failed(err)
	}
}

// WriteHeader is the wrapped writer's, under a fresh deadline.
func (w *stallWriter) WriteHeader(code int) {
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *stallWriter) failed(err error) {
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
		return
	}
	if w.stalled.CompareAndSwap(false, true) {
		w.onStall()
	}
	w.cancel(errClientStalled)
}
