// Package transcribe is a client of the OpenAI-compatible speech
// recognition API, POST /v1/audio/transcriptions, as whisper.cpp's server,
// faster-whisper servers and LocalAI speak it: a clip in, the words spoken
// out, so that a voice can be cloned without typing its transcripts.
package transcribe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/drama-tts/drama/internal/httpsafe"
)

// DefaultModel is the model named in a request when Client.Model is empty;
// servers of one model ignore it.
const DefaultModel = "whisper-1"

// Client sends clips to a transcription server.
type Client struct {
	// URL is the server: its base (http://127.0.0.1:8080, or .../v1) or
	// the full .../audio/transcriptions address.
	URL string
	// Model is the request's model field (default DefaultModel).
	Model string
	// Language, when set, is the clip's language (ISO 639-1, e.g. "en").
	Language string
	// HTTP is the client used (default: one with a 10 minute timeout whose
	// redirects keep credential headers with the server's origin,
	// httpsafe.CheckRedirect).
	HTTP *http.Client
}

// Endpoint returns the transcriptions address of a server URL: a URL that
// ends in /audio/transcriptions is kept, one ending in /v1 gets
// /audio/transcriptions, any other /v1/audio/transcriptions.
func Endpoint(server string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(server))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("transcribe: %q is not an http(s) URL: give the server's address, e.g. http://127.0.0.1:8080", server)
	}
	p := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(p, "/audio/transcriptions"):
	case strings.HasSuffix(p, "/v1"):
		p += "/audio/transcriptions"
	default:
		p += "/v1/audio/transcriptions"
	}
	u.Path = p
	return u.String(), nil
}

// Error is a failed transcription: the server's status and message.
type Error struct {
	URL    string
	Status int // 0 when no reply came
	Msg    string
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("transcribe: %s: %s", e.URL, e.Msg)
	}
	return fmt.Sprintf("transcribe: %s: %d %s: %s", e.URL, e.Status, http.StatusText(e.Status), e.Msg)
}

// ErrNoSpeech is returned when the server heard no words.
var ErrNoSpeech = errors.New("transcribe: the server heard no words in the clip")

// File transcribes the audio file at path, sent under the name name (its
// base name when empty).
func (c *Client) File(ctx context.Context, path, name string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	defer f.Close()
	if name == "" {
		name = filepath.Base(path)
	}
	return c.Transcribe(ctx, name, f)
}

// Transcribe sends one clip and returns its words as one line: spaces
// collapsed, line breaks and control characters taken out.
func (c *Client) Transcribe(ctx context.Context, name string, audio io.Reader) (string, error) {
	endpoint, err := Endpoint(c.URL)
	if err != nil {
		return "", err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	model := c.Model
	if model == "" {
		model = DefaultModel
	}
	_ = mw.WriteField("model", model)
	_ = mw.WriteField("response_format", "json")
	if c.Language != "" {
		_ = mw.WriteField("language", c.Language)
	}
	fw, err := mw.CreateFormFile("file", filepath.Base(name))
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(fw, audio); err != nil {
		return "", fmt.Errorf("transcribe: reading %s: %w", name, err)
	}
	if err := mw.Close(); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, &body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Minute, CheckRedirect: httpsafe.CheckRedirect}
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &Error{URL: endpoint, Msg: err.Error() + ": is the transcription server running there?"}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", &Error{URL: endpoint, Status: resp.StatusCode, Msg: "reading the reply: " + err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		return "", &Error{URL: endpoint, Status: resp.StatusCode, Msg: replyMessage(data)}
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Text == nil {
		return "", &Error{URL: endpoint, Status: resp.StatusCode, Msg: "the reply is not {\"text\": ...}: " + snippet(data)}
	}
	text := Clean(*out.Text)
	if text == "" {
		return "", ErrNoSpeech
	}
	return text, nil
}

// Clean makes a recognised text one line: control characters and line
// breaks become spaces, runs of spaces one, the ends trimmed.
func Clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

func replyMessage(data []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && len(e.Error) > 0 {
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &m) == nil && m.Message != "" {
			return m.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
	}
	return snippet(data)
}

func snippet(data []byte) string {
	s := strings.TrimSpace(string(data))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "(empty reply)"
	}
	return s
}
