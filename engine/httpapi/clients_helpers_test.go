package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/internal/emutest"
)

// gatedEngine holds every synthesis after its first chunk until the test
// opens the gate, so a test can see that the first audio left drama serve
// while the engine was still making the rest, without timing anything.
type gatedEngine struct {
	engine.Speech
	mu       sync.Mutex
	gate     chan struct{}
	streamed bool // the last request asked the engine to stream
	// holdAt is the call of Next that waits for the gate (default 2: the
	// one after the first chunk).
	holdAt int
	// held counts the syntheses that reached the gate while it was shut.
	held atomic.Int32
}

// gateLimit is how long a hold lasts at most when no audio reaches the
// client: the gate then opens on its own so that a server which holds
// audio back cannot hang the test.
var gateLimit = emutest.Scale(30 * time.Second)

// holdUntilFirstBytes arms the gate for the next synthesis and returns
// the callback for the client's first bytes, which opens it, and early,
// which says whether they came while the engine still held the rest back,
// or else what happened instead (for the test's failure message).
func (g *gatedEngine) holdUntilFirstBytes() (first func(), early func() (bool, string)) {
	gate := g.arm()
	before := g.held.Load()
	var opened bool
	timer := time.AfterFunc(gateLimit, func() { close(gate) })
	first = func() {
		if opened = timer.Stop(); opened {
			close(gate)
		}
	}
	early = func() (bool, string) {
		if opened {
			return true, ""
		}
		if g.held.Load() == before {
			return false, fmt.Sprintf("in %s the engine never reached its hold", gateLimit)
		}
		return false, fmt.Sprintf("the engine held the rest back for %s and no audio reached the client", gateLimit)
	}
	return first, early
}

// arm returns a fresh gate for the next synthesis.
func (g *gatedEngine) arm() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
	return g.gate
}

func (g *gatedEngine) lastStreamed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.streamed
}

func (g *gatedEngine) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	st, err := g.Speech.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	gate := g.gate
	g.streamed = req.Stream
	g.mu.Unlock()
	return &gatedStream{AudioStream: st, gate: gate, ctx: ctx, holdAt: max(g.holdAt, 2), held: &g.held}, nil
}

type gatedStream struct {
	engine.AudioStream
	gate   chan struct{}
	ctx    context.Context
	calls  int
	holdAt int
	held   *atomic.Int32
}

func (s *gatedStream) Next() ([]byte, error) {
	if s.calls++; s.calls == s.holdAt && s.gate != nil {
		select {
		case <-s.gate:
			return s.AudioStream.Next()
		default:
		}
		s.held.Add(1)
		select {
		case <-s.gate:
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
	return s.AudioStream.Next()
}

// failingEngine fails every synthesis the way the native engine does when
// its process died: a KindFailed error whose text holds the engine's last
// output, local paths included. midway fails after the first chunk instead
// of before it.
type failingEngine struct {
	engine.Speech
	midway bool
}

const secretTail = "/home/operator/.local/share/drama/engine/tensorfold-native: CUDA error: out of memory at /opt/build/src/kernel.cu:42"

func engineDied() error {
	return &engine.Error{Kind: engine.KindFailed, Op: "synthesize",
		Msg:     "native: engine exited with code 70; its last output:\n  " + secretTail,
		LogTail: "loading /home/operator/.local/share/drama/full/model.safetensors\n" + secretTail}
}

func (f *failingEngine) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	if !f.midway {
		return nil, engineDied()
	}
	st, err := f.Speech.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	return &failingStream{AudioStream: st}, nil
}

type failingStream struct {
	engine.AudioStream
	calls int
}

func (s *failingStream) Next() ([]byte, error) {
	if s.calls++; s.calls > 1 {
		return nil, engineDied()
	}
	return s.AudioStream.Next()
}

// rawExchange is one request written by hand onto a fresh connection and
// its response read back byte by byte, chunked bodies decoded here, so the
// framing (Content-Length, chunks, the terminating chunk, trailers, a
// close) is seen exactly as a client sees it.
type rawExchange struct {
	Proto      string
	Status     int
	Header     http.Header
	Body       []byte
	Trailer    http.Header
	Chunked    bool
	Terminated bool // the zero-length chunk arrived
	CleanEOF   bool // a body without framing ended with the connection
	Complete   bool // readWhole: the body reached its Content-Length
}

// rawOpen sends head (request line and headers, without the blank line),
// a Content-Length and Connection: close, then body, over a new
// connection to addr, and reads the reply's status line and headers; the
// body is left in br. Status is 0 when the connection closed without a
// reply. The caller closes conn.
func rawOpen(t *testing.T, addr, head string, body []byte) (conn net.Conn, br *bufio.Reader, r rawExchange) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "%s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", head, len(body))
	conn.Write(body)
	br = bufio.NewReader(conn)
	line, _ := br.ReadString('\n')
	fmt.Sscanf(line, "%s %d", &r.Proto, &r.Status)
	r.Header = readHeaders(br)
	return conn, br, r
}

// rawSpeech opens method path with body as proto (rawOpen) as a client of
// the API sends it, and fails the test when no reply comes.
func rawSpeech(t *testing.T, url, proto, method, path, body string) (conn net.Conn, br *bufio.Reader, r rawExchange) {
	t.Helper()
	addr := strings.TrimPrefix(url, "http://")
	head := fmt.Sprintf("%s %s %s\r\nHost: %s", method, path, proto, addr)
	if body != "" || method == http.MethodPost {
		head += "\r\nContent-Type: application/json"
	}
	if proto == "HTTP/1.1" {
		head += "\r\nTE: trailers"
	}
	conn, br, r = rawOpen(t, addr, head, []byte(body))
	if r.Status == 0 {
		conn.Close()
		t.Fatalf("%s %s: no status line", method, path)
	}
	return conn, br, r
}

// rawDo sends method path with body as proto ("HTTP/1.0" or "HTTP/1.1").
// stop, when set, is called once the headers and the first body bytes have
// arrived, before the rest is read.
func rawDo(t *testing.T, url, proto, method, path, body string, stop func(first []byte)) rawExchange {
	t.Helper()
	conn, br, r := rawSpeech(t, url, proto, method, path, body)
	defer conn.Close()
	var err error
	first := func() {
		if stop != nil {
			stop(r.Body)
			stop = nil
		}
	}
	if r.Header.Get("Transfer-Encoding") != "chunked" {
		if cl := r.Header.Get("Content-Length"); cl != "" {
			n, _ := strconv.Atoi(cl)
			r.Body = make([]byte, n)
			if _, err := io.ReadFull(br, r.Body); err != nil {
				t.Fatalf("body shorter than its Content-Length %d: %v", n, err)
			}
			first()
			return r
		}
		r.Body, err = io.ReadAll(br)
		r.CleanEOF = err == nil
		first()
		return r
	}
	r.Chunked = true
	for {
		sizeLine, err := br.ReadString('\n')
		if err != nil {
			return r
		}
		n, err := strconv.ParseInt(strings.TrimSpace(sizeLine), 16, 64)
		if err != nil {
			t.Fatalf("bad chunk size line %q", sizeLine)
		}
		if n == 0 {
			r.Terminated = true
			r.Trailer = readHeaders(br)
			return r
		}
		chunk := make([]byte, n+2)
		if _, err := io.ReadFull(br, chunk); err != nil {
			return r
		}
		r.Body = append(r.Body, chunk[:n]...)
		first()
	}
}
