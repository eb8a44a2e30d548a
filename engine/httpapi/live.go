package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/vmihailenco/msgpack/v5"
)

// Bounds of a /v1/tts/live session.
const (
	// DefaultLiveIdle is how long a session waits for the client's next
	// event before it ends.
	DefaultLiveIdle = 30 * time.Second
	// MaxLiveRunes bounds the text of a whole session.
	MaxLiveRunes = 100_000
	// maxLivePending is the most text held without a sentence's end: past
	// it the text is cut at its last space and spoken.
	maxLivePending = 600
)

// liveSentenceEnds end a sentence when followed by a space (or the end of
// the text at flush or stop); the full-width ones end it at once.
const (
	liveSentenceEnds = ".!?;…"
	liveWideEnds     = "。！？；"
)

// handleLive is Fish Audio's WebSocket /v1/tts/live: the client sends
// msgpack events (start with the request, text pieces, flush, stop); the
// text is cut into sentences as it arrives, and each sentence is spoken
// as soon as it is complete, in order, its audio sent as audio events
// while later text still arrives. The session holds an engine only while
// it speaks a sentence, and ends with a finish event.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) {
	rec := &Recorder{ResponseWriter: w}
	defer func() { s.metrics.observeRequest(rec.Status()) }()
	if e := s.notQualified(); e != nil {
		writeError(rec, e)
		return
	}
	// The guard has checked the Host and the Origin of this request (it
	// wraps every route): the library's own same-origin check would refuse
	// the pages --allow-origin lets in.
	c, err := websocket.Accept(rec, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the request
	}
	defer c.CloseNow()
	c.SetReadLimit(MaxFishBodyBytes)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	sess := &liveSession{s: s, c: c, r: r, cancel: cancel, sentences: make(chan string, 64), idle: s.liveIdle()}
	sess.run(ctx)
}

// liveIdle is a session's idle timeout.
func (s *Server) liveIdle() time.Duration {
	if s.cfg.LiveIdle > 0 {
		return s.cfg.LiveIdle
	}
	return DefaultLiveIdle
}

// liveSession is one /v1/tts/live connection.
type liveSession struct {
	s         *Server
	c         *websocket.Conn
	r         *http.Request
	idle      time.Duration
	cancel    context.CancelCauseFunc
	finished  sync.Once
	template  *speech     // the start event's request, checked
	sentences chan string // complete sentences, in order
	pending   strings.Builder
	runes     int // text received
	wavSent   bool
}

// liveEvent is an event the client sends.
type liveEvent struct {
	Event   string
	Text    string
	Request *fishTTS
}

// finish ends the session once: the finish event (reason stop, or error
// with its message), the session's work cancelled, the connection closed.
func (l *liveSession) finish(err *apiError) {
	l.finished.Do(func() {
		ev := map[string]any{"event": "finish", "reason": "stop"}
		if err != nil {
			ev["reason"], ev["message"] = "error", err.Message
			if err.Param != "" {
				ev["param"] = err.Param
			}
		}
		b, _ := msgpack.Marshal(ev)
		wctx, cancel := context.WithTimeout(context.Background(), l.s.cfg.StallTimeout)
		defer cancel()
		sent := l.c.Write(wctx, websocket.MessageBinary, b) == nil
		l.cancel(errors.New("the session ended"))
		if sent {
			_ = l.c.Close(websocket.StatusNormalClosure, "")
		}
	})
}

// run reads the client's events while the sentences are spoken, and ends
// the session: a failed sentence ends it at once with its error, the
// client's stop once every sentence is spoken.
func (l *liveSession) run(ctx context.Context) {
	ev, e := l.read(ctx)
	if e == nil && ev.Event != "start" {
		e = fishRefused("event", "the first event is %q: a session begins with a start event holding the request", ev.Event)
	}
	if e == nil {
		e = l.start(ev.Request)
	}
	if e != nil {
		l.finish(e)
		return
	}
	spoken := make(chan *apiError, 1)
	go func() { spoken <- l.speakAll(ctx) }()
	e = l.receive(ctx)
	close(l.sentences)
	if e != nil {
		l.finish(e) // a client that left reads nothing: the write fails at once
	}
	<-spoken
	l.finish(nil)
}

// start checks the start event's request as POST /v1/tts checks a body,
// its text (often empty) aside: the session's sentences take its place.
func (l *liveSession) start(t *fishTTS) *apiError {
	if t == nil {
		return fishRefused("request", "the start event has no request: send {event: \"start\", request: {...}}")
	}
	first := ""
	if t.Text != nil {
		first = *t.Text
	}
	probe := "start"
	t.Text = &probe
	req, e := l.s.fishSpeech(l.r, t)
	if e != nil {
		return e
	}
	req.Whole, req.Stream = false, true
	l.template = req
	l.add(first, false)
	return nil
}

// read reads the next event; none within the idle timeout ends the
// session.
func (l *liveSession) read(ctx context.Context) (liveEvent, *apiError) {
	idle := time.AfterFunc(l.idle, func() {
		l.finish(&apiError{Status: http.StatusRequestTimeout, Code: "idle", Message: fmt.Sprintf("no event came within %v: the session ends", l.idle)})
	})
	typ, b, err := l.c.Read(ctx)
	idle.Stop()
	switch {
	case err != nil && ctx.Err() != nil:
		return liveEvent{}, clientClosed() // the session has ended
	case websocket.CloseStatus(err) != -1 || errors.Is(err, io.EOF):
		return liveEvent{Event: "closed"}, nil
	case err != nil:
		return liveEvent{}, clientClosed()
	case typ != websocket.MessageBinary:
		return liveEvent{}, fishRefused("event", "events are binary msgpack messages")
	}
	return decodeLiveEvent(b)
}

func decodeLiveEvent(b []byte) (liveEvent, *apiError) {
	m := mpReader{msgpack.NewDecoder(bytes.NewReader(b))}
	n, e := m.mapLen("event")
	if e != nil {
		return liveEvent{}, e
	}
	var ev liveEvent
	for range n {
		key, err := m.d.DecodeString()
		if err != nil {
			return ev, fishRefused("event", "an event's key is not a string")
		}
		if m.null() {
			continue
		}
		switch key {
		case "event":
			ev.Event, e = m.str("event")
		case "text":
			ev.Text, e = m.str("text")
		case "request":
			ev.Request, e = m.request("request")
		default:
			return ev, fishRefused(key, "unknown member %q of an event: events are start {request}, text {text}, flush and stop", key)
		}
		if e != nil {
			return ev, e
		}
	}
	return ev, nil
}

// receive reads the client's events until stop (or the connection ends),
// cutting the text into sentences as it comes.
func (l *liveSession) receive(ctx context.Context) *apiError {
	for {
		ev, e := l.read(ctx)
		if e != nil {
			return e
		}
		switch ev.Event {
		case "text":
			if e := checkControls("text", ev.Text); e != nil {
				return l.template.refusal(e)
			}
			if l.runes += utf8.RuneCountInString(ev.Text); l.runes > MaxLiveRunes {
				return fishRefused("text", "the session's text is over %d characters: open another session", MaxLiveRunes)
			}
			l.add(ev.Text, false)
		case "flush":
			l.add("", true)
		case "stop", "closed":
			l.add("", true)
			return nil
		case "start":
			return fishRefused("event", "a second start event: a session speaks one request; open another for the next")
		default:
			return fishRefused("event", "unknown event %q: events are start, text, flush and stop", ev.Event)
		}
	}
}

// add appends text and hands on every sentence it completes; all makes
// what is held one sentence (flush, stop).
func (l *liveSession) add(text string, all bool) {
	l.pending.WriteString(text)
	held := l.pending.String()
	for {
		cut := sentenceEnd(held)
		if cut < 0 && utf8.RuneCountInString(held) > maxLivePending {
			cut = strings.LastIndexFunc(held, unicode.IsSpace)
			if cut <= 0 {
				cut = len(held)
			}
		}
		if cut < 0 {
			break
		}
		l.emit(held[:cut])
		held = held[cut:]
	}
	if all {
		l.emit(held)
		held = ""
	}
	l.pending.Reset()
	l.pending.WriteString(held)
}

func (l *liveSession) emit(sentence string) {
	if strings.TrimSpace(sentence) != "" {
		l.sentences <- strings.TrimSpace(sentence)
	}
}

// sentenceEnd is the byte offset just past the first complete sentence
// of s, or -1: a sentence ends at . ! ? ; … followed by a space or a line
// break, at a full-width end, or at a blank line.
func sentenceEnd(s string) int {
	for i, c := range s {
		next := i + utf8.RuneLen(c)
		switch {
		case strings.ContainsRune(liveWideEnds, c):
			return next
		case strings.ContainsRune(liveSentenceEnds, c):
			if next < len(s) {
				if r, _ := utf8.DecodeRuneInString(s[next:]); unicode.IsSpace(r) {
					return next
				}
			}
		case c == '\n' && next < len(s) && s[next] == '\n':
			return next
		}
	}
	return -1
}

// speakAll speaks the sentences in order as they come, each through the
// engine path of POST /v1/tts, holding an engine only while it speaks.
func (l *liveSession) speakAll(ctx context.Context) *apiError {
	var failed *apiError
	for sentence := range l.sentences {
		if failed == nil && ctx.Err() == nil {
			if failed = l.speakOne(ctx, sentence); failed != nil && ctx.Err() == nil {
				l.finish(failed) // at once: the client need not send all its text first
			}
		} // after a failure the rest is read and dropped, so the reader never blocks
	}
	return failed
}

func (l *liveSession) speakOne(ctx context.Context, sentence string) *apiError {
	req := *l.template
	req.Input = sentence
	req.RequestID = requestID(ctx)
	if e := l.s.checkInput(&speechRequest{Input: &sentence}, &req); e != nil {
		return req.refusal(e)
	}
	if l.wavSent && req.Format == "wav" {
		req.Format = "pcm" // one WAV header for the session, then its PCM
	}
	start := time.Now()
	turn, lease, release, stream, e := l.s.begin(ctx, http.Header{}, &req)
	if e != nil {
		return e
	}
	defer release()
	defer stream.Close()
	obs := &observer{s: l.s, start: start, turn: turn}
	out := &liveSink{l: l, ctx: ctx}
	err := l.s.produce(ctx, out, &req, stream, obs)
	obs.done(stream.Final())
	if out.err != nil {
		return out.err
	}
	if err != nil {
		return l.s.engineError(ctx, err, lease)
	}
	if req.Format == "wav" {
		l.wavSent = true
	}
	return nil
}

// liveSink sends what a synthesis makes as audio events, each under the
// stall timeout: a client that takes none within it is cut, which ends
// the synthesis and frees the engine.
type liveSink struct {
	l   *liveSession
	ctx context.Context
	err *apiError
}

func (o *liveSink) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	b, _ := msgpack.Marshal(map[string]any{"event": "audio", "audio": p})
	wctx, cancel := context.WithTimeout(o.ctx, o.l.s.cfg.StallTimeout)
	defer cancel()
	if err := o.l.c.Write(wctx, websocket.MessageBinary, b); err != nil {
		if o.ctx.Err() == nil && wctx.Err() != nil {
			o.l.s.clientStalled()
			o.err = &apiError{Status: 499, Code: "client_stalled", Message: errClientStalled.Error()}
		} else {
			o.err = clientClosed()
		}
		return 0, o.err
	}
	return len(p), nil
}

func (o *liveSink) Flush() {}

var _ sink = (*liveSink)(nil)
