package connlimit

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T, l *Limiter, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go l.Serve(srv, ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func get(t *testing.T, addr string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET on a fresh connection: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Idle connections at the bound give way to a new client; connections all
// answering requests keep their places and the new one gets a 503.
func TestIdleGiveWayBusyKeep(t *testing.T) {
	l := New(3)
	release := make(chan struct{})
	held := make(chan struct{}, 3) // a /hold request is being answered
	addr := start(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			held <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}))
	for range 6 { // six idle connections, open until the test ends
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	if st, body := get(t, addr); st != 200 || body != "ok" {
		t.Fatalf("with 6 idle connections open: %d %q, want 200", st, body)
	}
	if n := l.Open(); n > 3 {
		t.Errorf("%d connections open, bound 3", n)
	}
	// three requests in flight hold every place
	done := make(chan struct{}, 3)
	for range 3 {
		go func() {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				io.WriteString(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
				io.Copy(io.Discard, c)
				c.Close()
			}
			done <- struct{}{}
		}()
	}
	for i := range 3 {
		select {
		case <-held:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of the 3 requests held reached the handler in 20 s", i)
		}
	}
	st, body := get(t, addr)
	if st != http.StatusServiceUnavailable || !strings.Contains(body, "too many connections") {
		t.Errorf("every place answering a request: %d %q, want 503", st, body)
	}
	close(release)
}

// TestConnContextReachesTheSocket: a ConnContext set before Serve gets
// the admitted connection, and through its NetConn the TCP socket itself,
// whose settings (its send buffer) a server may change.
func TestConnContextReachesTheSocket(t *testing.T) {
	got := make(chan net.Conn, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if u, ok := c.(interface{ NetConn() net.Conn }); ok {
				got <- u.NetConn()
			} else {
				got <- c
			}
			return ctx
		}}
	go New(4).Serve(srv, ln)
	t.Cleanup(func() { srv.Close() })
	get(t, ln.Addr().String())
	c := <-got
	if _, ok := c.(*net.TCPConn); !ok {
		t.Fatalf("ConnContext got a %T with no NetConn to its socket: a server cannot set the socket's buffers", c)
	}
}
