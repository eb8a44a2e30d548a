package native

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/internal/wait"
)

// MaxChunk is the most PCM bytes the client hands over in one call: the
// engine contract's chunk, so the plugin passes chunks on as they come.
const MaxChunk = engine.MaxChunk

// Defaults of the busy retry: the server may answer 503 for a moment after a
// cancelled synthesis (200 ms on the stand-in), and for the instant between
// one reply's last byte and its next request. The first pause is
// BusyRetryFirst; each one after it doubles, up to DefaultBusyRetry for
// the first BusyFastFor: a request that meets the window after a cancel
// gets the engine within 10 ms of its end (with pauses of 50 ms, up to
// 50 ms after it, which a client that stopped reading added to every
// request queued behind it). A server still busy after BusyFastFor is
// asked every BusyRetrySlow, the native server's own advice.
const (
	BusyRetryFirst     = 2 * time.Millisecond
	DefaultBusyRetry   = 10 * time.Millisecond
	BusyFastFor        = 500 * time.Millisecond
	BusyRetrySlow      = 50 * time.Millisecond
	DefaultBusyTimeout = 10 * time.Second
)

// AudioFunc receives PCM: whole little-endian 16-bit samples, at most
// MaxChunk bytes. The slice is valid only during the call.
type AudioFunc func(pcm []byte) error

// Result describes a finished synthesis.
type Result struct {
	FinishReason     string        // stop, length or silence
	LongFormSegments string        // X-Long-Form-Segments as sent, or ""
	Bytes            int64         // PCM bytes delivered
	BusyRetries      int           // 503 answers retried
	FirstAudio       time.Duration // from the call to the first audio
	Total            time.Duration // from the call to the end
}

// Client speaks the native server's HTTP contract on a raw connection: it
// writes the request, reads the status, headers, chunked body and trailer
// itself, and closes the connection when the context is cancelled. A
// connection whose reply was read to its framed end, from a server that
// did not ask to close it, waits up to IdleTimeout for the next request
// (HTTP/1.1 keep-alive); a request on such a connection that gets no byte
// of reply (the server closed it meanwhile) is sent once more on a new
// one. A Client is safe for concurrent use.
type Client struct {
	Addr        string        // host:port of the server
	BusyRetry   time.Duration // longest pause between 503 retries; 0 means 10 ms for BusyFastFor, then 50 ms
	BusyTimeout time.Duration // give up retrying after this; 0 means 10 s
	// IdleTimeout is how long a finished connection waits for the next
	// request; 0 means DefaultIdleTimeout, negative one connection per
	// request.
	IdleTimeout time.Duration
	Dialer      net.Dialer

	idle idleConns

	// now and sleep are the clock of the busy retry; nil means the real one.
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

// NewClient returns a client of the server at addr with the default retry.
func NewClient(addr string) *Client { return &Client{Addr: addr} }

// Synthesize sends req and hands the PCM to fn as it arrives (see Open and
// Stream.Next), returning the result once the reply is complete.
func (c *Client) Synthesize(ctx context.Context, req *SpeechRequest, fn AudioFunc) (*Result, error) {
	st, err := c.Open(ctx, req)
	if err != nil {
		return st.resultOrEmpty(), err
	}
	defer st.Close()
	for {
		p, err := st.Next()
		if errors.Is(err, io.EOF) {
			return st.Result(), nil
		}
		if err != nil {
			return st.Result(), err
		}
		if err := fn(p); err != nil {
			return st.Result(), err
		}
	}
}

// Open sends req and returns once the server accepted it: after a 200 and,
// for a whole WAV, its header. A 503 is retried after 2 ms, then after
// pauses that double up to BusyRetry (by default 10 ms for the first
// BusyFastFor, then BusyRetrySlow), for up to BusyTimeout; a 400 is
// ErrInvalid in the server's words. Cancelling ctx
// closes the connection, which is how the server learns of the cancel. The
// caller must Close the stream.
func (c *Client) Open(ctx context.Context, req *SpeechRequest) (*Stream, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("native: encode request: %w", err)
	}
	now, sleep := time.Now, sleepCtx
	if c.now != nil {
		now, sleep = c.now, c.sleep
	}
	start := now()
	deadline := start.Add(c.busyTimeout())
	retries := 0
	pause := min(BusyRetryFirst, c.busyRetry(0))
	for {
		st, err := c.openOnce(ctx, body, req.ResponseFormat)
		if err == nil {
			st.start, st.res.BusyRetries = start, retries
			return st, nil
		}
		if !errors.Is(err, ErrBusy) || now().Add(pause).After(deadline) {
			return nil, err
		}
		retries++
		err = sleep(ctx, pause)
		pause = min(2*pause, c.busyRetry(now().Sub(start)))
		if err != nil {
			return nil, err
		}
	}
}

func (c *Client) openOnce(ctx context.Context, body []byte, format string) (*Stream, error) {
	bufSize := streamReadBuffer
	if format == "" || format == FormatWAV {
		bufSize = wholeReadBuffer
	}
	conn, resp, err := c.roundTrip(ctx, "POST", SpeechPath, body, bufSize)
	if err != nil {
		return nil, err
	}
	st := &Stream{ctx: ctx, client: c, conn: conn, resp: resp, body: resp.body, buf: make([]byte, MaxChunk)}
	st.stop = context.AfterFunc(ctx, func() { conn.Close() })
	if format == "" || format == FormatWAV {
		info, err := ReadWAVHeader(resp.body)
		if err != nil {
			st.Close()
			if !errors.Is(err, ErrTruncated) {
				err = fmt.Errorf("%w: %w", ErrProtocol, err)
			}
			return nil, st.wrap(fmt.Errorf("native: reply: %w", err))
		}
		st.body = &exactReader{r: io.LimitReader(resp.body, info.DataSize), left: info.DataSize}
		st.wav, st.size = true, info.DataSize
	}
	return st, nil
}

// Stream is one accepted synthesis: PCM comes from Next.
type Stream struct {
	ctx     context.Context
	client  *Client
	conn    net.Conn
	resp    *response
	body    io.Reader
	buf     []byte
	carry   int // an odd byte kept for the next call
	pending byte
	stop    func() bool
	start   time.Time
	res     Result
	done    bool
	err     error
	wav     bool  // a WAV reply, whose header said its size
	size    int64 // PCM bytes the WAV header announced
}

// Whole returns the PCM bytes of a whole WAV reply framed by its
// Content-Length: its size (the WAV header's) and its end (X-Finish-Reason
// and X-Long-Form-Segments as headers; such a body has no trailer) are
// known before the audio. ok is false for a stream or a chunked body,
// whose trailer may still change its end.
func (s *Stream) Whole() (pcmBytes int64, ok bool) {
	if !s.wav || s.resp.chunks != nil || s.resp.header.Get("Content-Length") == "" {
		return 0, false
	}
	return s.size, true
}

// Buffered returns how many bytes of the body have arrived and not been
// taken: more than 0 means the next Next returns without waiting on the
// connection. For a chunked body it counts the chunks' framing too.
func (s *Stream) Buffered() int {
	if s.done || s.err != nil {
		return 0
	}
	n := int64(s.resp.r.Buffered() + s.carry)
	if e, ok := s.body.(*exactReader); ok {
		n = min(n, e.left+int64(s.carry))
	}
	return int(n)
}

// Next returns the next PCM: whole samples, at most MaxChunk bytes, valid
// until the next call. After the last it returns io.EOF, with Result
// filled; any other error means the audio is incomplete.
func (s *Stream) Next() ([]byte, error) {
	if s.done || s.err != nil {
		return nil, s.final()
	}
	if s.carry > 0 {
		s.buf[0] = s.pending
	}
	for {
		n, err := s.body.Read(s.buf[s.carry:])
		n += s.carry
		whole := n &^ 1
		s.carry = n - whole
		if whole > 0 {
			s.deliver(whole)
			if err != nil && !errors.Is(err, io.EOF) {
				s.err = s.wrap(errTruncatedOr(err))
			}
			return s.buf[:whole], nil
		}
		if errors.Is(err, io.EOF) {
			return nil, s.end()
		}
		if err != nil {
			s.err = s.wrap(errTruncatedOr(err))
			return nil, s.err
		}
	}
}

// deliver accounts for whole bytes about to be returned and keeps an odd
// trailing byte for the next call (it is copied to the front then).
func (s *Stream) deliver(whole int) {
	if s.res.Bytes == 0 {
		s.res.FirstAudio = time.Since(s.start)
	}
	s.res.Bytes += int64(whole)
	if s.carry > 0 {
		s.pending = s.buf[whole]
	}
}

func (s *Stream) end() error {
	if s.carry != 0 {
		s.err = fmt.Errorf("%w: odd byte count: the PCM ends inside a sample", ErrProtocol)
		return s.err
	}
	s.done = true
	if err := s.resp.finish(&s.res); err != nil {
		s.err = err
		return err
	}
	s.res.Total = time.Since(s.start)
	return io.EOF
}

func (s *Stream) final() error {
	if s.err != nil {
		return s.err
	}
	return io.EOF
}

// wrap reports a cancel as the context's error rather than a broken reply.
func (s *Stream) wrap(err error) error {
	if s.ctx.Err() != nil {
		return fmt.Errorf("native: synthesis cancelled: %w", s.ctx.Err())
	}
	return err
}

// Result returns the result so far; complete after Next returned io.EOF.
func (s *Stream) Result() *Result {
	r := s.res
	return &r
}

func (s *Stream) resultOrEmpty() *Result {
	if s == nil {
		return &Result{}
	}
	return s.Result()
}

// Header returns a header of the reply, such as X-Long-Form-Segments when
// the server sent it before the audio.
func (s *Stream) Header(key string) string { return s.resp.header.Get(key) }

// Close ends the stream: closing before io.EOF closes the connection,
// which cancels the synthesis; after it the connection is kept for the
// next request where the reply allows (Client).
func (s *Stream) Close() error {
	if s.stop() && s.done && s.err == nil {
		s.client.release(s.conn, s.resp)
		return nil
	}
	return s.conn.Close()
}

// Health asks the server's health route; nil means it answered 200.
func (c *Client) Health(ctx context.Context) error {
	conn, resp, err := c.roundTrip(ctx, "GET", HealthPath, nil, healthReadBuffer)
	if err != nil {
		return err
	}
	// It answered 200. Its body is read only where all of it has
	// arrived, so the connection can carry the next request; a body still
	// coming (slow or endless) is never waited for: it is closed.
	if b, ok := resp.body.(*exactReader); ok && b.left <= int64(resp.r.Buffered()) {
		if _, err := io.Copy(io.Discard, b); err == nil {
			c.release(conn, resp)
			return nil
		}
	}
	return conn.Close()
}

// busyRetry is the longest pause between 503 retries once busy has
// lasted that long.
func (c *Client) busyRetry(busy time.Duration) time.Duration {
	switch {
	case c.BusyRetry > 0:
		return c.BusyRetry
	case busy < BusyFastFor:
		return DefaultBusyRetry
	}
	return BusyRetrySlow
}

func (c *Client) busyTimeout() time.Duration {
	if c.BusyTimeout > 0 {
		return c.BusyTimeout
	}
	return DefaultBusyTimeout
}

// response is a parsed status line and header with the body still on r.
type response struct {
	proto  string // HTTP/1.1 or HTTP/1.0
	code   int
	header textproto.MIMEHeader
	r      *bufio.Reader
	body   io.Reader
	chunks *chunkedReader
}

// roundTrip writes one request, on a kept connection when there is one,
// else on a new one, and reads the status and header. A status other than
// 200 is returned as a *StatusError after reading its body. On success the
// caller owns the connection: release or close it.
func (c *Client) roundTrip(ctx context.Context, method, path string, body []byte, bufSize int) (net.Conn, *response, error) {
	if conn := c.idle.get(); conn != nil {
		resp, err := c.attempt(ctx, conn, method, path, body, bufSize)
		if !errors.Is(err, errNoReply) || ctx.Err() != nil {
			return c.result(ctx, conn, resp, method, path, err)
		}
		// The server closed the kept connection as the request went out,
		// before it answered: nothing of it ran, so it goes again on a new one.
	}
	conn, err := c.Dialer.DialContext(ctx, "tcp", c.Addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("native: %s %s: %w", method, path, ctx.Err())
		}
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, c.Addr, err)
	}
	resp, err := c.attempt(ctx, conn, method, path, body, bufSize)
	return c.result(ctx, conn, resp, method, path, err)
}

// result is roundTrip's answer from an attempt on conn: a failure the
// context's end caused is reported as that.
func (c *Client) result(ctx context.Context, conn net.Conn, resp *response, method, path string, err error) (net.Conn, *response, error) {
	switch {
	case err == nil:
		return conn, resp, nil
	case ctx.Err() != nil:
		return nil, nil, fmt.Errorf("native: %s %s: %w", method, path, ctx.Err())
	}
	return nil, nil, err
}

// attempt writes the request on conn and reads the reply's status and
// header, closing conn if ctx ends meanwhile. A status other than 200 is
// its *StatusError, its body read and conn released; on any other failure
// conn is closed.
func (c *Client) attempt(ctx context.Context, conn net.Conn, method, path string, body []byte, bufSize int) (*response, error) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	resp, err := c.exchange(conn, method, path, body, bufSize)
	if err == nil && resp.code != 200 {
		err = resp.statusError()
		if stop() {
			c.release(conn, resp)
		} else {
			conn.Close()
		}
		return nil, err
	}
	stop()
	if err != nil {
		conn.Close()
	}
	return resp, err
}

// errNoReply matches a request that got no byte of reply: its connection
// failed as it was written, or ended before the status line began
// (noReply).
var errNoReply = errors.New("no reply")

// noReply is err, which errors.Is also finds to be errNoReply.
type noReply struct{ err error }

func (e noReply) Error() string        { return e.err.Error() }
func (e noReply) Unwrap() error        { return e.err }
func (e noReply) Is(target error) bool { return target == errNoReply }

func (c *Client) exchange(conn net.Conn, method, path string, body []byte, bufSize int) (*response, error) {
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nTE: trailers\r\n", method, path, c.Addr)
	if c.IdleTimeout < 0 {
		req.WriteString("Connection: close\r\n")
	}
	if body != nil {
		fmt.Fprintf(&req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.Write(body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		return nil, noReply{fmt.Errorf("%w: %s %s: write request: %v", ErrUnreachable, method, path, err)}
	}
	r := bufio.NewReaderSize(conn, bufSize)
	if _, err := r.Peek(1); err != nil {
		return nil, noReply{fmt.Errorf("%w: no status line: %v", ErrServer, err)}
	}
	return readResponse(r)
}

// release keeps conn for the next request when its reply was read to its
// framed end, nothing more came, and the server let it stay open; else it
// closes it.
func (c *Client) release(conn net.Conn, resp *response) {
	if c.IdleTimeout < 0 || !resp.ended() || !resp.keepAlive() || resp.r.Buffered() > 0 {
		conn.Close()
		return
	}
	timeout := c.IdleTimeout
	if timeout == 0 {
		timeout = DefaultIdleTimeout
	}
	c.idle.put(conn, timeout)
}

// CloseIdle closes the connections kept for the next request: for a
// server about to stop.
func (c *Client) CloseIdle() { c.idle.closeAll() }

// What one read from the connection may take: a whole reply's audio,
// which comes in a burst, is taken in large parts, which the plugin sends
// on as large frames (Stream.Buffered); a stream's comes a frame at a time.
const (
	wholeReadBuffer  = 128 << 10
	streamReadBuffer = 64 << 10
	healthReadBuffer = 4 << 10
)

func readResponse(r *bufio.Reader) (*response, error) {
	tp := textproto.NewReader(r)
	line, err := tp.ReadLine()
	if err != nil {
		return nil, fmt.Errorf("%w: no status line: %v", ErrServer, err)
	}
	proto, status, ok := strings.Cut(line, " ")
	code, cerr := strconv.Atoi(strings.SplitN(status, " ", 2)[0])
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") || cerr != nil {
		return nil, fmt.Errorf("%w: status line %q", ErrProtocol, line)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrProtocol, err)
	}
	resp := &response{proto: proto, code: code, header: h, r: r}
	return resp, resp.setBody()
}

func (resp *response) setBody() error {
	if strings.EqualFold(resp.header.Get("Transfer-Encoding"), "chunked") {
		resp.chunks = newChunkedReader(resp.r)
		resp.body = resp.chunks
		return nil
	}
	if cl := resp.header.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: Content-Length %q", ErrProtocol, cl)
		}
		resp.body = &exactReader{r: io.LimitReader(resp.r, n), left: n}
		return nil
	}
	resp.body = resp.r
	return nil
}

// ended tells whether the body was read to its framed end (its
// Content-Length, or the chunked body's last chunk and trailer): a body
// the connection's end delimits never has.
func (resp *response) ended() bool {
	switch b := resp.body.(type) {
	case *chunkedReader:
		return b.done
	case *exactReader:
		return b.left == 0
	}
	return false
}

// keepAlive tells whether the server lets the connection carry another
// request: HTTP/1.1 without Connection: close.
func (resp *response) keepAlive() bool {
	if resp.proto != "HTTP/1.1" {
		return false
	}
	for _, v := range resp.header.Values("Connection") {
		for _, opt := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(opt), "close") {
				return false
			}
		}
	}
	return true
}

// statusError reads a short error body and returns the server's words,
// taken from a JSON {"error": ...} body when there is one.
func (resp *response) statusError() error {
	b, _ := io.ReadAll(io.LimitReader(resp.body, 8<<10))
	return &StatusError{Code: resp.code, Message: serverWords(b)}
}

func serverWords(b []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &v) == nil && len(v.Error) > 0 {
		var s string
		if json.Unmarshal(v.Error, &s) == nil {
			return s
		}
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &m) == nil && m.Message != "" {
			return m.Message
		}
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(no message)"
	}
	return s
}

func (resp *response) finish(res *Result) error {
	get := func(k string) string {
		if resp.chunks != nil && resp.chunks.trailer.Get(k) != "" {
			return resp.chunks.trailer.Get(k)
		}
		return resp.header.Get(k)
	}
	res.FinishReason = get(HeaderFinishReason)
	res.LongFormSegments = get(HeaderLongFormSegments)
	if res.FinishReason == "" {
		res.FinishReason = FinishStop
	}
	if !ValidFinishReason(res.FinishReason) {
		return fmt.Errorf("%w: %s: want stop, length or silence, got %q", ErrProtocol, HeaderFinishReason, res.FinishReason)
	}
	if _, _, err := ParseLongFormSegments(res.LongFormSegments); err != nil {
		return err
	}
	return nil
}

// errTruncatedOr maps an early end of the body to ErrTruncated.
func errTruncatedOr(err error) error {
	if errors.Is(err, ErrTruncated) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", ErrTruncated, err)
	}
	return err
}

// exactReader is a length-limited body that fails with ErrTruncated when the
// connection ends before the announced length.
type exactReader struct {
	r    io.Reader
	left int64
}

// Read implements io.Reader.
func (e *exactReader) Read(p []byte) (int, error) {
	if e.left == 0 {
		return 0, io.EOF
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, fmt.Errorf("%w: %d bytes missing from the body", ErrTruncated, e.left)
	}
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("%w: %v", ErrTruncated, err)
	}
	return n, err
}

// ParseLongFormSegments parses X-Long-Form-Segments, "N;S2,S3,...": the
// number of segments and the sample offset at which each segment after the
// first begins.
// An empty value is zero segments.
func ParseLongFormSegments(v string) (n int, starts []int, err error) {
	if v == "" {
		return 0, nil, nil
	}
	bad := func() (int, []int, error) {
		return 0, nil, fmt.Errorf("%w: %s: want N;S2,S3,..., got %q", ErrProtocol, HeaderLongFormSegments, v)
	}
	head, rest, _ := strings.Cut(v, ";")
	n, err = strconv.Atoi(strings.TrimSpace(head))
	if err != nil || n < 1 {
		return bad()
	}
	for _, s := range strings.Split(rest, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		x, err := strconv.Atoi(s)
		if err != nil || x < 0 {
			return bad()
		}
		starts = append(starts, x)
	}
	if len(starts) != n-1 {
		return bad()
	}
	return n, starts, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if err := wait.Sleep(ctx, d); err != nil {
		return fmt.Errorf("native: synthesis cancelled: %w", err)
	}
	return nil
}
