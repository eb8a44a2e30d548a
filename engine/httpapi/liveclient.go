package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/vmihailenco/msgpack/v5"
)

// LiveRequest is what a /v1/tts/live session speaks with.
type LiveRequest struct {
	// Voice is the reference_id: a voice of GET /model; empty: the
	// engine's default voice.
	Voice string
	// Format is wav (one header, then PCM whose length is not known:
	// 0xFFFFFFFF sizes) or pcm.
	Format string
}

// LiveResult is how a session went.
type LiveResult struct {
	FirstAudio time.Duration // from the session's start to its first audio
	Bytes      int64         // audio bytes received, the WAV header included
}

// LiveRefused is a session the server refused before it began (a 401, a
// 403, a 404): Response is its answer, the body kept readable.
type LiveRefused struct {
	Response *http.Response
}

func (e *LiveRefused) Error() string { return "drama serve refused the session: " + e.Response.Status }

// LiveFailed is a session the server ended with finish reason error.
type LiveFailed struct {
	Message string
}

func (e *LiveFailed) Error() string { return "drama serve ended the session: " + e.Message }

// liveChunk is the most text one text event carries.
const liveChunk = 4 << 10

// SpeakLive speaks text as it comes through the /v1/tts/live session at
// url (ws:// or wss://), with key as its Bearer token (none when empty):
// text is sent in pieces as reads return it (a piece never splits a
// character), a stop at its end, and each audio event is written to audio
// as it arrives. It returns when the server finishes; a read of text that
// fails ends the session with that error.
func SpeakLive(ctx context.Context, client *http.Client, url, key string, req LiveRequest, text io.Reader, audio io.Writer) (LiveResult, error) {
	var res LiveResult
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	start := time.Now()
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: client, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body = io.NopCloser(bytes.NewReader(body))
			return res, &LiveRefused{Response: resp}
		}
		return res, err
	}
	defer c.CloseNow()
	c.SetReadLimit(MaxFishBodyBytes)
	send := func(ev map[string]any) error {
		b, _ := msgpack.Marshal(ev)
		return c.Write(ctx, websocket.MessageBinary, b)
	}
	request := map[string]any{"text": "", "format": req.Format}
	if req.Voice != "" {
		request["reference_id"] = req.Voice
	}
	if err := send(map[string]any{"event": "start", "request": request}); err != nil {
		return res, err
	}
	readErr := make(chan error, 1)
	go func() { readErr <- sendText(text, send) }()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			select {
			case rerr := <-readErr:
				if rerr != nil {
					return res, rerr
				}
			default:
			}
			return res, fmt.Errorf("the session broke off before it finished: %w", err)
		}
		var ev struct {
			Event   string `msgpack:"event"`
			Audio   []byte `msgpack:"audio"`
			Reason  string `msgpack:"reason"`
			Message string `msgpack:"message"`
		}
		if err := msgpack.Unmarshal(b, &ev); err != nil {
			return res, fmt.Errorf("drama serve sent an event that is not msgpack: %v", err)
		}
		switch ev.Event {
		case "audio":
			if res.Bytes == 0 {
				res.FirstAudio = time.Since(start)
			}
			if _, err := audio.Write(ev.Audio); err != nil {
				return res, err
			}
			res.Bytes += int64(len(ev.Audio))
		case "finish":
			if ev.Reason != "stop" {
				return res, &LiveFailed{Message: ev.Message}
			}
			_ = c.Close(websocket.StatusNormalClosure, "")
			return res, nil
		}
	}
}

// sendText sends text's reads as text events, holding back the bytes of
// a character a read cut, then stop. A failed read is returned, and
// sends no stop: the session does not end as if the text were whole.
func sendText(text io.Reader, send func(map[string]any) error) error {
	buf := make([]byte, liveChunk)
	var held []byte
	for {
		n, err := text.Read(buf)
		piece := append(held, buf[:n]...)
		cut := len(piece) // a read may end inside a character: its bytes wait for the next
		if i := lastStart(piece); i < len(piece) && !utf8.FullRune(piece[i:]) {
			cut = i
		}
		if cut > 0 {
			if serr := send(map[string]any{"event": "text", "text": strings.ToValidUTF8(string(piece[:cut]), "\uFFFD")}); serr != nil {
				return serr
			}
		}
		held = append([]byte(nil), piece[cut:]...)
		switch {
		case errors.Is(err, io.EOF):
			if len(held) > 0 {
				_ = send(map[string]any{"event": "text", "text": strings.ToValidUTF8(string(held), "\uFFFD")})
			}
			return send(map[string]any{"event": "stop"})
		case err != nil:
			return fmt.Errorf("read the text: %w", err)
		}
	}
}

// lastStart is the index where the last character of b begins.
func lastStart(b []byte) int {
	i := len(b) - 1
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return max(i, 0)
}
