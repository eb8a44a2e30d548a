// Package uploadtest plays a hostile uploader against a server in tests: a
// client that sends its request's body a byte at a time, with a pause
// after each (a slow-loris upload).
package uploadtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Reply is the server's answer to a slow upload.
type Reply struct {
	// Status is the reply's status, 0 when the connection ended without
	// one (Err says why).
	Status int
	Header http.Header
	Body   string
	// Sent is how many bytes of the body had been sent when the reply
	// came.
	Sent int
	Err  error
}

// Slow posts body (of type contentType, its length declared) to path on
// addr over a connection of its own: the headers at once, then the body a
// byte at a time with pause before each, until the body is sent or the
// server answers. The reply comes on the channel once read; the
// connection is closed when ctx ends, or after a minute.
func Slow(ctx context.Context, addr, path, contentType string, body []byte, pause time.Duration) <-chan Reply {
	out := make(chan Reply, 1)
	go func() {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			out <- Reply{Err: err}
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(time.Minute))
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		defer stop()
		answered := make(chan struct{})
		var sent atomic.Int64
		go func() {
			if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", path, addr, contentType, len(body)); err != nil {
				return
			}
			t := time.NewTicker(pause)
			defer t.Stop()
			for i := range body {
				select {
				case <-answered:
					return
				case <-t.C:
				}
				if _, err := conn.Write(body[i : i+1]); err != nil {
					return
				}
				sent.Add(1)
			}
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		close(answered)
		if err != nil {
			out <- Reply{Sent: int(sent.Load()), Err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b), Sent: int(sent.Load())}
	}()
	return out
}
