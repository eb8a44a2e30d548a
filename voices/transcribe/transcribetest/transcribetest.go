// Package transcribetest is a stand-in of an OpenAI-compatible speech
// recognition server (POST /v1/audio/transcriptions) for tests: it checks
// requests as OpenAI's API does and answers the text a test chooses for
// each clip.
package transcribetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"

	"github.com/drama-tts/drama/voices/transcribe"
)

// TextFunc answers a clip, given its file name and bytes; a non-zero fault
// makes the reply that error status instead.
type TextFunc func(filename string, audio []byte) (text string, fault int)

// Server is a running stand-in.
type Server struct {
	*httptest.Server
	// Text answers each clip. Set before use.
	Text TextFunc

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
func Trim(text string) TextFunc {
	return func(string, []byte) (string, int) { return "  " + strings.ReplaceAll(text, " ", "  ") + "\n", 0 }
}

// pointTag is a point tag as the model performs it: a recogniser writes
// the words it hears, not the tags.
var pointTag = regexp.MustCompile(`\[[^\]]*\]`)

// Hear is a Text that hears the words a clip carries: spoken finds the text
// in the samples of the clip's WAV data chunk (a stand-in engine's speech
// carries it: standin.SpokenText), and the answer is that text without its
// point tags; audio that carries none (noise, a clip that is not a WAV) is
// heard as no words at all, an empty text.
func Hear(spoken func(pcm []byte) (string, bool)) TextFunc {
	return func(_ string, audio []byte) (string, int) {
		pcm, ok := wavData(audio)
		if !ok {
			return "", 0
		}
		text, ok := spoken(pcm)
		if !ok {
			return "", 0
		}
		return strings.Join(strings.Fields(pointTag.ReplaceAllString(text, " ")), " "), 0
	}
}

// wavData returns the bytes of a RIFF WAVE file's data chunk.
func wavData(b []byte) ([]byte, bool) {
	if len(b) < 12 || !bytes.Equal(b[:4], []byte("RIFF")) || !bytes.Equal(b[8:12], []byte("WAVE")) {
		return nil, false
	}
	for i := 12; i+8 <= len(b); {
		id, size := string(b[i:i+4]), int(binary.LittleEndian.Uint32(b[i+4:i+8]))
		i += 8
		if id == "data" {
			return b[i:min(len(b), i+size)], true
		}
		if size < 0 || size > len(b)-i {
			return nil, false
		}
		i += size + size%2
	}
	return nil, false
}

// Garble is a Text that garbles a share (0 to 1) of the words text hears:
// the words as transcribe.Words counts them, every word i for which
// floor((i+1)*share) passes floor(i*share) replaced by a word no text
// has ("garbled1", "garbled2", ...). Of n words floor(n*share) are
// garbled, so the word error rate of the answer against the clip's text is
// that many errors over n words when text hears the words right. A fault
// of text is passed on.
func Garble(share float64, text TextFunc) TextFunc {
	return func(name string, audio []byte) (string, int) {
		heard, fault := text(name, audio)
		if fault != 0 {
			return heard, fault
		}
		words := transcribe.Words(heard)
		k := 0
		for i := range words {
			if math.Floor(float64(i+1)*share) > math.Floor(float64(i)*share) {
				k++
				words[i] = fmt.Sprintf("garbled%d", k)
			}
		}
		return strings.Join(words, " "), 0
	}
}
