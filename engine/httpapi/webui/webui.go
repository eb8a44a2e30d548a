// Package webui is the page drama serve shows at "/": speak a line and hear
// it as it is made, manage the cloned voices, and see the server's state.
// Every script, style and icon is embedded in the binary; the page loads
// nothing from elsewhere (its Content-Security-Policy forbids it) and calls
// only the API of the server that served it, so it works under that
// server's Host and Origin rules with no --allow-origin.
package webui

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drama-tts/drama/voices/clip"
)

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of the page: itself only.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; media-src 'self' blob:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// Config configures the page's handler.
type Config struct {
	// UploadDir holds the clips sent to the clip check while they are
	// analysed (default: the system's temporary directory).
	UploadDir string
	// MaxClipBytes bounds a clip sent to the clip check.
	MaxClipBytes int64
	// MaxClips bounds the clips of one check.
	MaxClips int
	// MaxRequestBytes bounds a whole check (default: MaxClips clips of
	// MaxClipBytes).
	MaxRequestBytes int64
	// FFmpeg decodes clips that are not WAV; empty looks ffmpeg up on PATH.
	FFmpeg string
	// Transcribe, when set, gives the words spoken in a clip file: the
	// clip check transcribes the clips sent without words, for the page to
	// show them for correction.
	Transcribe func(ctx context.Context, path, name string) (string, error)
}

// Handler serves the page and its assets.
type Handler struct {
	cfg   Config
	files http.Handler
	check chan struct{} // one clip check at a time
}

// New returns the page's handler.
func New(cfg Config) *Handler {
	if cfg.UploadDir == "" {
		cfg.UploadDir = os.TempDir()
	}
	if cfg.MaxClipBytes <= 0 {
		cfg.MaxClipBytes = 64 << 20
	}
	if cfg.MaxClips <= 0 {
		cfg.MaxClips = 8
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = int64(cfg.MaxClips) * cfg.MaxClipBytes
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return &Handler{cfg: cfg, files: http.FileServerFS(sub), check: make(chan struct{}, 1)}
}

// Register adds the page's routes to mux: GET (and HEAD) of "/" exactly,
// the assets under /ui/, and POST /ui/clip-check.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", h.servePage)
	mux.HandleFunc("GET /ui/{file}", h.serveAsset)
	mux.HandleFunc("POST /ui/clip-check", h.serveCheck)
}

func secure(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache")
}

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	secure(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(b))
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name == "index.html" {
		http.Redirect(w, r, "/", http.StatusMovedPermanently)
		return
	}
	if _, err := fs.Stat(assets, "assets/"+name); err != nil {
		writeErr(w, http.StatusNotFound, "not_found", "no page asset "+name)
		return
	}
	secure(w)
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + name
	h.files.ServeHTTP(w, r2)
}

// Checked is the answer of POST /ui/clip-check: what drama encode's
// preparation finds in the clips, before anything is encoded.
type Checked struct {
	Clips    []CheckedClip  `json:"clips"`
	Warnings []clip.Warning `json:"warnings"`
	// Error is why the clips would be refused; empty when they pass.
	Error string `json:"error,omitempty"`
	// Transcription tells whether the server transcribes clips sent
	// without their words (drama serve --transcribe-url).
	Transcription bool `json:"transcription"`
}

// CheckedClip is one clip's measures.
type CheckedClip struct {
	Name       string  `json:"name"`
	Seconds    float64 `json:"seconds"`
	SpeechDBFS float64 `json:"speech_dbfs"`
	SNR        float64 `json:"snr_db,omitempty"`
	Pieces     int     `json:"pieces"`
	// Transcript is the words the transcription server heard, for a clip
	// sent without its own; TranscriptError is why there are none.
	Transcript      string `json:"transcript,omitempty"`
	TranscriptError string `json:"transcript_error,omitempty"`
}

// serveCheck runs the clip checks of a clone on uploaded clips (multipart
// "clip" files) and answers their warnings, or why they would be refused.
func (h *Handler) serveCheck(w http.ResponseWriter, r *http.Request) {
	select {
	case h.check <- struct{}{}:
		defer func() { <-h.check }()
	case <-r.Context().Done():
		return
	}
	if err := os.MkdirAll(h.cfg.UploadDir, 0o700); err != nil {
		writeErr(w, http.StatusInternalServerError, "upload_failed", "cannot store the clips: "+err.Error())
		return
	}
	dir, err := os.MkdirTemp(h.cfg.UploadDir, "check-*")
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "upload_failed", "cannot store the clips: "+err.Error())
		return
	}
	defer os.RemoveAll(dir)
	if r.ContentLength > h.cfg.MaxRequestBytes {
		writeErr(w, http.StatusRequestEntityTooLarge, "upload_too_large", fmt.Sprintf("the clips are %d bytes; the limit is %d (drama serve --max-upload-bytes)", r.ContentLength, h.cfg.MaxRequestBytes))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxRequestBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		writeErr(w, http.StatusBadRequest, "invalid_request", "send the clips as multipart/form-data, files named clip: "+err.Error())
		return
	}
	var clips []clip.Clip
	var paths, texts []string
	dec := clip.Decoder{FFmpeg: h.cfg.FFmpeg, MaxDuration: time.Duration(clip.MaxTotal) * time.Second / clip.SampleRate}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeErr(w, http.StatusBadRequest, "invalid_request", "reading the clips: "+err.Error())
			return
		}
		if part.FormName() == "transcript" {
			b, _ := io.ReadAll(io.LimitReader(part, 64<<10))
			part.Close()
			texts = append(texts, string(b))
			continue
		}
		if part.FormName() != "clip" {
			part.Close()
			continue
		}
		name := fmt.Sprintf("clip %d", len(clips)+1)
		if fn := part.FileName(); fn != "" {
			name += " (" + filepath.Base(fn) + ")"
		}
		if len(clips) == h.cfg.MaxClips {
			part.Close()
			writeErr(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("more than %d clips: a voice keeps at most %d references", h.cfg.MaxClips, h.cfg.MaxClips))
			return
		}
		a, path, msg := h.decodePart(r.Context(), dec, part, dir, len(clips))
		part.Close()
		if msg != "" {
			writeJSON(w, http.StatusOK, Checked{Clips: []CheckedClip{}, Warnings: []clip.Warning{}, Error: name + ": " + msg, Transcription: h.cfg.Transcribe != nil})
			return
		}
		clips = append(clips, clip.Clip{Name: name, Audio: a})
		paths = append(paths, path)
	}
	if len(clips) == 0 {
		writeErr(w, http.StatusBadRequest, "invalid_request", "send one or more files named clip")
		return
	}
	res, err := clip.Prepare(clips, clip.Options{})
	out := Checked{Clips: []CheckedClip{}, Warnings: []clip.Warning{}, Transcription: h.cfg.Transcribe != nil}
	if res != nil {
		for i, c := range res.Clips {
			cc := CheckedClip{Name: c.Source, Seconds: c.Seconds, SpeechDBFS: c.SpeechDBFS, Pieces: c.Pieces}
			if c.Background.Measured {
				cc.SNR = c.SNR
			}
			if h.cfg.Transcribe != nil && i < len(paths) && (i >= len(texts) || strings.TrimSpace(texts[i]) == "") {
				text, err := h.cfg.Transcribe(r.Context(), paths[i], clipFile(c.Source))
				if err != nil {
					cc.TranscriptError = err.Error()
				}
				cc.Transcript = text
			}
			out.Clips = append(out.Clips, cc)
		}
		out.Warnings = append(out.Warnings, res.Warnings...)
	}
	if err != nil {
		out.Error = err.Error()
	} else if res != nil {
		// drama encode keeps a clip with one transcript as one reference
		for _, c := range res.Clips {
			if c.Pieces > 1 {
				out.Error = fmt.Sprintf("%s is cut into %d references, and one transcript cannot be split: send each utterance as a clip of its own", c.Source, c.Pieces)
				break
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// clipFile is the file name in a clip's label, "clip 2 (take2.wav)".
func clipFile(label string) string {
	if i := strings.IndexByte(label, '('); i >= 0 && strings.HasSuffix(label, ")") {
		return label[i+1 : len(label)-1]
	}
	return "clip.wav"
}

func (h *Handler) decodePart(ctx context.Context, dec clip.Decoder, part io.Reader, dir string, i int) (*clip.Audio, string, string) {
	f, err := os.CreateTemp(dir, "clip-*")
	if err != nil {
		return nil, "", "cannot store it: " + err.Error()
	}
	n, err := io.Copy(f, io.LimitReader(part, h.cfg.MaxClipBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return nil, "", "reading it: " + err.Error()
	case n > h.cfg.MaxClipBytes:
		return nil, "", fmt.Sprintf("over %d bytes, the limit for one clip (drama serve --max-clip-bytes)", h.cfg.MaxClipBytes)
	case n == 0:
		return nil, "", "empty"
	}
	a, err := dec.Decode(ctx, f.Name())
	if err != nil {
		var fe *clip.FormatError
		if errors.As(err, &fe) && fe.Name == f.Name() {
			fe.Name = ""
		}
		return nil, "", strings.ReplaceAll(err.Error(), f.Name(), "the clip")
	}
	return a, f.Name(), ""
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, kind, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]string{"message": msg, "type": "invalid_request_error", "code": kind}})
}
