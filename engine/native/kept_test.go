package native_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/internal/emutest"
)

// keptServer is an HTTP/1.1 server that reads request after request on
// each connection it accepts. For the n-th request (from 1, over all
// connections) answer says what it sends back, and whether it then
// closes the connection; an empty reply closes it without answering.
type keptServer struct {
	addr     string
	conns    atomic.Int64 // connections accepted
	requests atomic.Int64 // requests read whole
	mu       sync.Mutex
	closed   int         // connections that ended, on either side
	heads    []string    // each request's head, in order
	ended    chan string // each ended connection's reason
}

func startKept(t *testing.T, answer func(n int64) (reply string, closeAfter bool)) *keptServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &keptServer{addr: ln.Addr().String(), ended: make(chan string, 64)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go s.serve(conn, answer)
		}
	}()
	return s
}

func (s *keptServer) serve(conn net.Conn, answer func(n int64) (string, bool)) {
	defer conn.Close()
	tp := textproto.NewReader(bufio.NewReader(conn))
	for {
		line, err := tp.ReadLine()
		if err != nil {
			s.end("client closed")
			return
		}
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			s.end("client closed")
			return
		}
		if n, _ := strconv.Atoi(h.Get("Content-Length")); n > 0 {
			if _, err := io.CopyN(io.Discard, tp.R, int64(n)); err != nil {
				s.end("client closed")
				return
			}
		}
		s.mu.Lock()
		s.heads = append(s.heads, line+" Connection="+h.Get("Connection"))
		s.mu.Unlock()
		reply, closeAfter := answer(s.requests.Add(1))
		if reply == "" {
			s.end("server closed unanswered")
			return
		}
		conn.Write([]byte(reply))
		if closeAfter {
			s.end("server closed")
			return
		}
	}
}

func (s *keptServer) end(why string) {
	s.mu.Lock()
	s.closed++
	s.mu.Unlock()
	select {
	case s.ended <- why:
	default: // a test that many connections end in does not ask why
	}
}

// nextEnd waits for a connection to end and says why.
func (s *keptServer) nextEnd(t *testing.T) string {
	t.Helper()
	select {
	case why := <-s.ended:
		return why
	case <-time.After(emutest.Scale(10 * time.Second)):
		t.Fatal("no connection ended in 10 s")
		return ""
	}
}

// wavReply is a whole reply of pcm framed by its Content-Length.
func wavReply(pcm []byte, extra string) string {
	body := append(native.WAVHeader(len(pcm)), pcm...)
	return "HTTP/1.1 200 OK\r\nContent-Type: audio/wav\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nX-Finish-Reason: stop\r\n" + extra + "\r\n" + string(body)
}

func speakWhole(t *testing.T, c *native.Client) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	_, err := c.Synthesize(context.Background(), &native.SpeechRequest{Input: "x", ResponseFormat: native.FormatWAV}, func(p []byte) error {
		out.Write(p)
		return nil
	})
	return out.Bytes(), err
}

// TestKeptConnectionCarriesTheNext: a reply read to its end leaves its
// connection for the next request, whole reply, stream, health and a
// busy answer alike, so the server accepts one connection for all.
func TestKeptConnectionCarriesTheNext(t *testing.T) {
	pcm := []byte("abcdefgh")
	s := startKept(t, func(n int64) (string, bool) {
		switch n {
		case 2:
			return streamHead + "4\r\nabcd\r\n0\r\nX-Finish-Reason: length\r\n\r\n", false
		case 3:
			return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
		case 4:
			return "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 6\r\n\r\n\"busy\"", false
		}
		return wavReply(pcm, ""), false
	})
	c := native.NewClient(s.addr)
	if got, err := speakWhole(t, c); err != nil || !bytes.Equal(got, pcm) {
		t.Fatalf("first: %q, %v", got, err)
	}
	res, err := c.Synthesize(context.Background(), &native.SpeechRequest{Input: "x", ResponseFormat: native.FormatPCM, Stream: true}, func([]byte) error { return nil })
	if err != nil || res.FinishReason != "length" || res.Bytes != 4 {
		t.Fatalf("stream: %+v, %v", res, err)
	}
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := speakWhole(t, c); err != nil || !bytes.Equal(got, pcm) {
		t.Fatalf("after busy: %q, %v", got, err)
	}
	if n, k := s.requests.Load(), s.conns.Load(); n != 5 || k != 1 {
		t.Errorf("%d connections for %d requests: want 5 requests (one answered busy, then asked again) on one connection, kept between them", k, n)
	}
	for _, h := range s.heads {
		if strings.Contains(strings.ToLower(h), "close") {
			t.Errorf("request %q asks to close its connection", h)
		}
	}
}

// TestServerClosingKeptConnection: a server that closes each connection
// after its reply (without saying so), or closes the kept one as the next
// request arrives, still answers every request: the request goes again,
// once, on a new connection. A new connection closed unanswered is an
// error, not a loop.
func TestServerClosingKeptConnection(t *testing.T) {
	pcm := []byte("wxyz")
	t.Run("after each reply", func(t *testing.T) {
		s := startKept(t, func(int64) (string, bool) { return wavReply(pcm, ""), true })
		c := native.NewClient(s.addr)
		for i := range 5 {
			if got, err := speakWhole(t, c); err != nil || !bytes.Equal(got, pcm) {
				t.Fatalf("request %d: %q, %v", i+1, got, err)
			}
		}
		if n := s.requests.Load(); n < 5 || n > 9 {
			t.Errorf("%d requests reached the server for 5 syntheses", n)
		}
	})
	t.Run("as the next request arrives", func(t *testing.T) {
		s := startKept(t, func(n int64) (string, bool) {
			if n == 2 {
				return "", true
			}
			return wavReply(pcm, ""), false
		})
		c := native.NewClient(s.addr)
		for i := range 2 {
			if got, err := speakWhole(t, c); err != nil || !bytes.Equal(got, pcm) {
				t.Fatalf("request %d: %q, %v", i+1, got, err)
			}
		}
		if n, k := s.requests.Load(), s.conns.Load(); n != 3 || k != 2 {
			t.Errorf("%d requests on %d connections: want the second sent again on a second connection", n, k)
		}
	})
	t.Run("a new connection unanswered", func(t *testing.T) {
		s := startKept(t, func(n int64) (string, bool) {
			if n == 1 {
				return wavReply(pcm, ""), false
			}
			return "", true
		})
		c := native.NewClient(s.addr)
		if _, err := speakWhole(t, c); err != nil {
			t.Fatal(err)
		}
		_, err := speakWhole(t, c)
		if !errors.Is(err, native.ErrServer) || !strings.Contains(err.Error(), "no status line") {
			t.Fatalf("err %v: want ErrServer, no status line", err)
		}
		if n := s.requests.Load(); n != 3 {
			t.Errorf("%d requests: want the first, then the second twice (kept, then new), no more", n)
		}
	})
}

// TestConnectionNotKept: a reply that asks to close, an HTTP/1.0 reply, one
// followed by bytes nobody asked for, a WAV shorter than its
// Content-Length body, a body the connection's end delimits, and a
// stream closed before its end each leave their connection closed: the
// next request dials anew and never reads what the last left behind.
func TestConnectionNotKept(t *testing.T) {
	pcm := []byte("abcd")
	whole := string(append(native.WAVHeader(len(pcm)), pcm...))
	for _, tc := range []struct{ name, reply string }{
		{"Connection: close", wavReply(pcm, "Connection: keep-alive, close\r\n")},
		{"HTTP/1.0", strings.Replace(wavReply(pcm, ""), "HTTP/1.1", "HTTP/1.0", 1)},
		{"stray bytes after the reply", wavReply(pcm, "") + "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL"},
		{"a WAV short of its body", "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(whole)+8) + "\r\nX-Finish-Reason: stop\r\n\r\n" + whole + "LIST\x00\x00\x00\x00"},
		{"no length", "HTTP/1.1 200 OK\r\nX-Finish-Reason: stop\r\n\r\n" + whole},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startKept(t, func(n int64) (string, bool) { return tc.reply, tc.name == "no length" })
			c := native.NewClient(s.addr)
			c.IdleTimeout = time.Hour // only the reply can end the connection
			for i := range 2 {
				if got, err := speakWhole(t, c); err != nil || !bytes.Equal(got, pcm) {
					t.Fatalf("request %d: %q, %v", i+1, got, err)
				}
			}
			if n := s.conns.Load(); n != 2 {
				t.Errorf("%d connections for 2 requests: the first must not be kept", n)
			}
		})
	}
	t.Run("stream closed before its end", func(t *testing.T) {
		s := startKept(t, func(n int64) (string, bool) {
			if n == 1 {
				return streamHead + "4\r\nabcd\r\n", false // the rest never comes
			}
			return wavReply(pcm, ""), false
		})
		c := native.NewClient(s.addr)
		c.IdleTimeout = time.Hour
		st, err := c.Open(context.Background(), &native.SpeechRequest{Input: "x", ResponseFormat: native.FormatPCM, Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := st.Next(); err != nil || string(p) != "abcd" {
			t.Fatalf("%q, %v", p, err)
		}
		st.Close()
		if why := s.nextEnd(t); why != "client closed" {
			t.Fatalf("the server saw %q: closing a stream early must close its connection (the cancel)", why)
		}
		if got, err := speakWhole(t, c); err != nil || !bytes.Equal(got, pcm) {
			t.Fatalf("next: %q, %v", got, err)
		}
		if n := s.conns.Load(); n != 2 {
			t.Errorf("%d connections: want a new one after the cancel", n)
		}
	})
}

// TestStrayBytesOnKeptConnection: a server that writes on a kept
// connection while no request is out (an answer nobody asked for) loses
// the connection; the next request is answered on a new one.
func TestStrayBytesOnKeptConnection(t *testing.T) {
	pcm := []byte("good")
	var first net.Conn
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	answer := func(conn net.Conn, reply string) {
		tp := textproto.NewReader(bufio.NewReader(conn))
		tp.ReadLine()
		h, _ := tp.ReadMIMEHeader()
		n, _ := strconv.Atoi(h.Get("Content-Length"))
		io.CopyN(io.Discard, tp.R, int64(n))
		conn.Write([]byte(reply))
	}
	c := native.NewClient(ln.Addr().String())
	done := make(chan error, 1)
	go func() { _, err := speakWhole(t, c); done <- err }()
	first = <-accepted
	defer first.Close()
	answer(first, wavReply(pcm, ""))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	first.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 48\r\nX-Finish-Reason: stop\r\n\r\n" + string(native.WAVHeader(4)) + "EVIL"))
	time.Sleep(20 * time.Millisecond) // the stray bytes reach the client's side
	go func() {
		got, err := speakWhole(t, c)
		if err == nil && !bytes.Equal(got, pcm) {
			err = errors.New("got " + strconv.Quote(string(got)))
		}
		done <- err
	}()
	var second net.Conn
	select {
	case second = <-accepted:
	case err := <-done:
		t.Fatalf("the request was answered by the stray bytes (%v): a kept connection with unasked bytes must be dropped", err)
	}
	defer second.Close()
	answer(second, wavReply(pcm, ""))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestIdleConnectionTimesOut: a kept connection is closed once it has
// waited IdleTimeout, and CloseIdle closes it at once; a negative
// IdleTimeout asks the server to close each connection after its reply.
func TestIdleConnectionTimesOut(t *testing.T) {
	pcm := []byte("abcd")
	s := startKept(t, func(int64) (string, bool) { return wavReply(pcm, ""), false })
	c := native.NewClient(s.addr)
	c.IdleTimeout = 50 * time.Millisecond
	if _, err := speakWhole(t, c); err != nil {
		t.Fatal(err)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections", n)
	}
	if why := s.nextEnd(t); why != "client closed" {
		t.Fatalf("the kept connection ended: %s", why)
	}

	c = native.NewClient(s.addr)
	c.IdleTimeout = time.Hour
	if _, err := speakWhole(t, c); err != nil {
		t.Fatal(err)
	}
	c.CloseIdle()
	if why := s.nextEnd(t); why != "client closed" {
		t.Fatalf("after CloseIdle: %s", why)
	}

	c = native.NewClient(s.addr)
	c.IdleTimeout = -1
	before := s.conns.Load()
	for range 2 {
		if _, err := speakWhole(t, c); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.conns.Load() - before; n != 2 {
		t.Errorf("IdleTimeout -1: %d connections for 2 requests", n)
	}
	s.mu.Lock()
	last := s.heads[len(s.heads)-1]
	s.mu.Unlock()
	if !strings.HasSuffix(last, "Connection=close") {
		t.Errorf("IdleTimeout -1: request %q does not ask to close", last)
	}
}

// TestKeptConnectionsUnderConcurrency: syntheses at once on one client
// each get their whole reply, and no more connections stay open than the
// client keeps.
func TestKeptConnectionsUnderConcurrency(t *testing.T) {
	pcm := bytes.Repeat([]byte("ab"), 5000)
	s := startKept(t, func(int64) (string, bool) { return wavReply(pcm, ""), false })
	c := native.NewClient(s.addr)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if got, err := speakWhole(t, c); err != nil || !bytes.Equal(got, pcm) {
					t.Errorf("%d bytes, %v", len(got), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	enginetest.WaitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.conns.Load()-int64(s.closed) <= 2
	})
	if n := s.requests.Load(); n != 160 {
		t.Errorf("%d requests for 160 syntheses", n)
	}
}

// TestHealthNeverWaitsOnItsBody plays a server whose health reply's body
// stalls after its first bytes, or whose chunked body never ends: Health
// answers at once from the status and closes the connection (the server
// sees it go), never waiting on the body to keep it.
func TestHealthNeverWaitsOnItsBody(t *testing.T) {
	for name, reply := range map[string]string{
		"stalled body":      "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok",
		"endless chunked":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n",
		"a billion to come": "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n" + strings.Repeat("x", 8<<10),
		"whole body, kept":  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	} {
		t.Run(name, func(t *testing.T) {
			s := startKept(t, func(int64) (string, bool) { return reply, false })
			c := native.NewClient(s.addr)
			c.IdleTimeout = time.Hour
			done := make(chan error, 1)
			go func() { done <- c.Health(context.Background()) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(emutest.Scale(10 * time.Second)):
				t.Fatal("Health waited on the body of a 200")
			}
			if name == "whole body, kept" {
				if err := c.Health(context.Background()); err != nil || s.conns.Load() != 1 {
					t.Fatalf("a whole body: %v, %d connections; want its connection kept", err, s.conns.Load())
				}
				return
			}
			if why := s.nextEnd(t); why != "client closed" {
				t.Fatalf("the server saw %q: a connection with a body still coming must be closed", why)
			}
		})
	}
}

// TestRedirectNotFollowed plays a server that answers a synthesis with a
// redirect to another port: the client reports the status as a server
// failure and never connects there.
func TestRedirectNotFollowed(t *testing.T) {
	other := startKept(t, func(int64) (string, bool) { return wavReply([]byte("evil"), ""), false })
	s := startKept(t, func(int64) (string, bool) {
		return "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://" + other.addr + native.SpeechPath + "\r\nContent-Length: 0\r\n\r\n", false
	})
	_, err := speakWhole(t, native.NewClient(s.addr))
	if !errors.Is(err, native.ErrServer) || !strings.Contains(err.Error(), "307") {
		t.Fatalf("err %v: want the 307 as a server failure", err)
	}
	if n := other.conns.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d connections", n)
	}
}
