// Package transcribetest is a stand-in of an OpenAI-compatible speech
// recognition server (POST /v1/audio/transcriptions) for tests: it checks
// requests as OpenAI's API does and answers the text a test chooses for
// each clip.
package transcribetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Server is a running stand-in.
type Server struct {
	*httptest.Server
	// Text answers a clip, given its file name and bytes; a non-empty
	// fault makes the reply that error status instead. Set before use.
	Text func(filename string, audio []byte) (text string, fault int)

	mu       sync.Mutex
	requests []Request
}

// Request is what the stand-in was sent.
type Request struct {
	Filename, Model, ResponseFormat, Language string
	SHA256                                    string // of the clip
}

// New starts a stand-in on loopback; its text is "Words of FILENAME."
// until Text is set. Close it when done.
func New() *Server {
	s := &Server{Text: func(name string, _ []byte) (string, int) { return "Words of " + name + ".", 0 }}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/transcriptions", s.handle)
	s.Server = httptest.NewServer(mux)
	return s
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func fail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		fail(w, http.StatusBadRequest, "send multipart/form-data: "+err.Error())
		return
	}
	f, fh, err := r.FormFile("file")
	if err != nil {
		fail(w, http.StatusBadRequest, "file is required")
		return
	}
	audio, _ := io.ReadAll(f)
	f.Close()
	model := r.FormValue("model")
	if model == "" {
		fail(w, http.StatusBadRequest, "model is required")
		return
	}
	format := r.FormValue("response_format")
	if format != "" && format != "json" && format != "text" && format != "verbose_json" {
		fail(w, http.StatusBadRequest, "response_format must be json, text or verbose_json")
		return
	}
	sum := sha256.Sum256(audio)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Filename: fh.Filename, Model: model, ResponseFormat: format,
		Language: r.FormValue("language"), SHA256: hex.EncodeToString(sum[:])})
	s.mu.Unlock()
	text, fault := s.Text(fh.Filename, audio)
	if fault != 0 {
		fail(w, fault, "simulated failure")
		return
	}
	if format == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, text+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"text": text})
}

// Trim is a Text that answers a text with untidy spacing, as recognisers do.
func Trim(text string) func(string, []byte) (string, int) {
	return func(string, []byte) (string, int) { return "  " + strings.ReplaceAll(text, " ", "  ") + "\n", 0 }
}
