// Package connlimit bounds the connections an HTTP server holds open, so
// that clients which open connections and leave them idle cannot use up
// the server's file descriptors and lock new clients out.
//
// At the bound a new connection takes the place of the one that has gone
// longest without a request being answered on it: an idle keep-alive
// connection, or one whose request has not yet arrived whole. Only when
// every connection is answering a request is the new one refused, with a
// 503 and Retry-After, and closed. A connection is "answering" from the
// moment the handler starts until it returns, so a long download keeps its
// place however long it runs.
package connlimit

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Limiter holds the bound and the open connections of one or more
// listeners. Make it with New; it is safe for concurrent use.
type Limiter struct {
	max   int
	mu    sync.Mutex
	conns map[*conn]struct{}
}

// New returns a Limiter allowing n connections at once (n < 1: 1).
func New(n int) *Limiter {
	return &Limiter{max: max(n, 1), conns: map[*conn]struct{}{}}
}

// Open is the number of connections open now.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Serve serves srv on ln under the bound: it wraps ln, srv.Handler and
// srv.ConnContext (keeping a ConnContext already set), then calls
// srv.Serve. Several servers may share one Limiter.
func (l *Limiter) Serve(srv *http.Server, ln net.Listener) error {
	next := srv.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		if c != nil {
			c.begin()
			defer c.end()
		}
		next.ServeHTTP(w, r)
	})
	connCtx := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, nc net.Conn) context.Context {
		if connCtx != nil {
			ctx = connCtx(ctx, nc)
		}
		if c, ok := nc.(*conn); ok {
			ctx = context.WithValue(ctx, connKey{}, c)
		}
		return ctx
	}
	return srv.Serve(&listener{Listener: ln, l: l})
}

type connKey struct{}

// listener counts the connections it accepts against its Limiter.
type listener struct {
	net.Listener
	l *Limiter
}

// refusalBody is the body of the 503 a connection refused at the bound
// reads; refusal the whole reply.
const refusalBody = "too many connections, every one answering a request: retry in a moment\n"

var refusal = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\n" +
	"Content-Length: " + strconv.Itoa(len(refusalBody)) + "\r\n\r\n" + refusalBody

// Accept implements net.Listener.
func (ln *listener) Accept() (net.Conn, error) {
	for {
		nc, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := ln.l.admit(nc); c != nil {
			return c, nil
		}
		go func() {
			_ = nc.SetDeadline(time.Now().Add(time.Second))
			_, _ = nc.Write([]byte(refusal))
			_ = nc.Close()
		}()
	}
}

// admit registers nc, closing the connection idle longest when at the
// bound; nil when every open connection is answering a request.
func (l *Limiter) admit(nc net.Conn) *conn {
	l.mu.Lock()
	var evict *conn
	if len(l.conns) >= l.max {
		for c := range l.conns {
			if c.busy == 0 && (evict == nil || c.since.Before(evict.since)) {
				evict = c
			}
		}
		if evict == nil {
			l.mu.Unlock()
			return nil
		}
		delete(l.conns, evict)
	}
	c := &conn{Conn: nc, l: l, since: time.Now()}
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	if evict != nil {
		_ = evict.Conn.Close()
	}
	return c
}

// conn is an admitted connection.
type conn struct {
	net.Conn
	l     *Limiter
	once  sync.Once
	busy  int       // requests being answered (guarded by l.mu)
	since time.Time // accepted, or its last request answered (guarded by l.mu)
}

// NetConn returns the connection it admitted (as tls.Conn's NetConn does),
// for the settings of the socket itself.
func (c *conn) NetConn() net.Conn { return c.Conn }

func (c *conn) begin() {
	c.l.mu.Lock()
	c.busy++
	c.l.mu.Unlock()
}

func (c *conn) end() {
	c.l.mu.Lock()
	c.busy--
	c.since = time.Now()
	c.l.mu.Unlock()
}

// Close implements net.Conn, giving back the connection's place.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
