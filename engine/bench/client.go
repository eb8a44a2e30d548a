package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/internal/httpsafe"
	"github.com/drama-tts/drama/voices/transcribe"
)

// Modes of a request.
const (
	Whole    = "whole"    // a WAV file in one reply
	Streamed = "streamed" // raw PCM in HTTP chunks
)

// Request is one speech request and what came back.
type Request struct {
	Pass   string `json:"pass"` // "cold", "warmup" or "warm"
	Index  int    `json:"index,omitempty"`
	Mode   string `json:"mode"` // Whole or Streamed
	TextID string `json:"text_id"`
	Class  string `json:"class"`
	Voice  string `json:"voice,omitempty"`
	Status int    `json:"status"`
	// FirstAudio is the seconds from sending the request to the first
	// byte of audio (streamed replies; for whole replies the whole file).
	FirstAudio   float64 `json:"first_audio_s"`
	Total        float64 `json:"total_s"`
	AudioSeconds float64 `json:"audio_s"`
	RTF          float64 `json:"rtf"`
	FinishReason string  `json:"finish_reason,omitempty"`
	Bytes        int64   `json:"bytes"` // of the body, headers of a WAV included
	// PCMSHA256 is the sha256 of the samples, whatever the reply's form:
	// the same text in the same voice must give the same value.
	PCMSHA256 string  `json:"pcm_sha256,omitempty"`
	Error     string  `json:"error,omitempty"` // why the reply is not valid audio
	Started   float64 `json:"started_s"`       // seconds since the run began
	// Transcript is what the transcription server heard in a warm whole
	// reply ("" for no words), WER its score against the text; both nil
	// when the reply was not transcribed. TranscribeError is the server's
	// error when it answered one.
	Transcript      *string           `json:"transcript,omitempty"`
	WER             *transcribe.Score `json:"wer,omitempty"`
	TranscribeError string            `json:"transcribe_error,omitempty"`
}

// Valid reports whether the reply was complete, valid audio.
func (r *Request) Valid() bool { return r.Error == "" }

// Client speaks to drama serve's API.
type Client struct {
	// URL is drama serve's base URL, e.g. http://127.0.0.1:8793.
	URL string
	// APIKey, when set, is sent with every request as
	// "Authorization: Bearer APIKey" (drama serve's API keys).
	APIKey string
	// HTTP is the client used (default: one whose redirects keep the key
	// with URL's origin, httpsafe.CheckRedirect).
	HTTP *http.Client
}

// AuthError is drama serve's 401 (no key, or one it does not know) or 403
// (a key without the scope the route needs).
type AuthError struct {
	Server  string // the base URL asked
	Route   string // e.g. "POST /v1/audio/speech"
	Status  int
	Message string // the server's own
	// Challenge is the reply's WWW-Authenticate header; a 403's names the
	// scope needed.
	Challenge string
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("bench: drama serve at %s answered %d to %s: %s", e.Server, e.Status, e.Route, e.Message)
}

var defaultHTTP = &http.Client{CheckRedirect: httpsafe.CheckRedirect}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

// newRequest builds a request to path on the server, with the key.
func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, body)
	if err != nil {
		return nil, err
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	return req, nil
}

// authError returns an *AuthError for a 401 or 403, nil for any other
// status; it reads the body of those two.
func (c *Client) authError(resp *http.Response, route string) error {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return nil
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(data))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if msg == "" {
		msg = resp.Status
	}
	return &AuthError{Server: c.URL, Route: route, Status: resp.StatusCode, Message: msg, Challenge: resp.Header.Get("WWW-Authenticate")}
}

// SpeakResult is the measured reply to one request, with its samples.
type SpeakResult struct {
	Request
	PCM []byte // the samples, little-endian 16-bit mono
	// Body is the error message of a refused request.
	Body string
}

// Speak sends one request and measures the reply: text in voice ("" for
// the served default), whole or streamed.
func (c *Client) Speak(ctx context.Context, text, voice, mode string) (*SpeakResult, error) {
	body := map[string]any{"input": text, "response_format": "wav", "stream": false}
	if mode == Streamed {
		body["response_format"], body["stream"] = "pcm", true
	}
	if voice != "" {
		body["voice"] = voice
	}
	return c.SpeakJSON(ctx, body, mode)
}

// SpeakJSON sends body as a speech request and measures the reply as a
// whole WAV (mode Whole) or a PCM stream (mode Streamed). A transport
// failure is an error, and so is a 401 or 403 (*AuthError: the key is
// missing, unknown or without scope speak); any other refused or broken
// reply is recorded in the result's Error.
func (c *Client) SpeakJSON(ctx context.Context, body map[string]any, mode string) (*SpeakResult, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := c.newRequest(ctx, http.MethodPost, "/v1/audio/speech", bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("bench: server URL %q: %w", c.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	res := &SpeakResult{Request: Request{Mode: mode}}
	start := time.Now()
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("bench: reach drama serve at %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	if err := c.authError(resp, "POST /v1/audio/speech"); err != nil {
		return nil, err
	}
	res.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		res.Body = string(msg)
		res.Error = fmt.Sprintf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		res.Total = time.Since(start).Seconds()
		return res, nil
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	if _, err := br.Peek(1); err == nil {
		res.FirstAudio = time.Since(start).Seconds()
	}
	data, rerr := io.ReadAll(br)
	res.Total = time.Since(start).Seconds()
	res.Bytes = int64(len(data))
	if mode == Whole {
		res.FirstAudio = res.Total
	}
	reason := resp.Header.Get(native.HeaderFinishReason)
	if t := resp.Trailer.Get(native.HeaderFinishReason); t != "" {
		reason = t
	}
	res.FinishReason = reason
	switch {
	case rerr != nil:
		res.Error = fmt.Sprintf("the reply broke off after %d bytes: %v", len(data), rerr)
	case mode == Whole:
		res.PCM, res.Error = wavSamples(data)
	default:
		res.PCM = data
		if len(data)%native.BytesPerSample != 0 {
			res.Error = fmt.Sprintf("the stream carried %d bytes, not whole 16-bit samples", len(data))
		}
	}
	if res.Error == "" && len(res.PCM) == 0 {
		res.Error = "no audio in the reply"
	}
	if res.Error == "" && reason != "" && !native.ValidFinishReason(reason) {
		res.Error = fmt.Sprintf("finish reason %q: want stop, length or silence", reason)
	}
	if res.FinishReason == "" && res.Error == "" {
		res.FinishReason = native.FinishStop // a complete stream sends no trailer when it stopped normally
	}
	res.AudioSeconds = float64(len(res.PCM)/native.BytesPerSample) / engine.SampleRate
	if res.AudioSeconds > 0 {
		res.RTF = res.Total / res.AudioSeconds
	}
	sum := sha256.Sum256(res.PCM)
	res.PCMSHA256 = hex.EncodeToString(sum[:])
	return res, nil
}

// wavSamples checks a whole reply is a mono 16-bit 44.1 kHz WAV whose data
// chunk holds exactly the bytes that follow, and returns the samples.
func wavSamples(data []byte) ([]byte, string) {
	r := bytes.NewReader(data)
	info, err := native.ReadWAVHeader(r)
	if err != nil {
		return nil, err.Error()
	}
	rest := data[len(data)-r.Len():]
	if info.DataSize != int64(len(rest)) && info.DataSize != 0xFFFFFFFF {
		return nil, fmt.Sprintf("WAV data chunk: header says %d bytes, the reply carries %d", info.DataSize, len(rest))
	}
	if len(rest)%native.BytesPerSample != 0 {
		return nil, fmt.Sprintf("WAV data chunk: %d bytes, not whole 16-bit samples", len(rest))
	}
	return rest, ""
}

// Voices lists the voice ids drama serve offers (GET /v1/voices); a 401
// or 403 is an *AuthError.
func (c *Client) Voices(ctx context.Context) ([]string, error) {
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/voices", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("bench: reach drama serve at %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	if err := c.authError(resp, "GET /v1/voices"); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: GET /v1/voices: %s", resp.Status)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("bench: GET /v1/voices: %w", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, v := range list.Data {
		ids = append(ids, v.ID)
	}
	return ids, nil
}

// Model returns the first model id drama serve lists (GET /v1/models), or
// "" when it lists none or does not answer.
func (c *Client) Model(ctx context.Context) string {
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return ""
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list) != nil || len(list.Data) == 0 {
		return ""
	}
	return list.Data[0].ID
}

// WaitReady polls GET /ready until it answers 200 or ctx ends.
func (c *Client) WaitReady(ctx context.Context) error {
	for {
		req, err := c.newRequest(ctx, http.MethodGet, "/ready", nil)
		if err != nil {
			return fmt.Errorf("bench: server URL %q: %w", c.URL, err)
		}
		if resp, err := c.http().Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("bench: drama serve at " + c.URL + " did not become ready: " + ctx.Err().Error())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
