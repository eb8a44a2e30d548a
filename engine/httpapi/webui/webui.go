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
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine/httpapi/upload"
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
	// StallTimeout is the longest wait for the next bytes of a check's
	// upload (default upload.DefaultStall), and UploadTimeout the longest
	// its whole upload may take (default upload.DefaultTimeout); past
	// either the answer is a 408.
	StallTimeout  time.Duration
	UploadTimeout time.Duration
	// Wait is how long a check, once its clips are on disk, waits for the
	// one running before a 429 with Retry-After (default 10 s; negative:
	// no wait).
	Wait time.Duration
	// FFmpeg decodes clips that are not WAV; empty looks ffmpeg up on PATH.
	FFmpeg string
	// Transcribe, when set, gives the words spoken in a clip file: the
	// clip check transcribes the clips sent without words, for the page to
	// show them for correction.
	Transcribe func(ctx context.Context, path, name string) (string, error)
}

// defaultWait is Config.Wait's default, drama serve's --clone-wait.
const defaultWait = 10 * time.Second

// Handler serves the page and its assets.
type Handler struct {
	cfg   Config
	files http.Handler
	check *upload.Slot // one clip check at a time
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
	if cfg.Wait == 0 {
		cfg.Wait = defaultWait
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return &Handler{cfg: cfg, files: http.FileServerFS(sub), check: upload.NewSlot(2 * time.Second)}
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
// The clips are received to disk, under the upload's limits, before the
// check waits its turn; only the check itself holds the one check slot.
func (h *Handler) serveCheck(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > h.cfg.MaxRequestBytes {
		writeErr(w, http.StatusRequestEntityTooLarge, "upload_too_large", fmt.Sprintf("the clips are %d bytes; the limit is %d (drama serve --max-upload-bytes)", r.ContentLength, h.cfg.MaxRequestBytes))
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
	body := upload.Receive(w, r, upload.Limits{MaxBytes: h.cfg.MaxRequestBytes, Stall: h.cfg.StallTimeout, Timeout: h.cfg.UploadTimeout})
	got, texts, refused := h.receive(w, r, body, dir)
	if refused {
		return
	}
	release, err := h.check.Take(r.Context(), h.cfg.Wait)
	switch {
	case errors.Is(err, upload.ErrBusy):
		w.Header().Set("Retry-After", strconv.Itoa(int(max(time.Second, h.check.Hold()+time.Second-1)/time.Second)))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]string{"type": "rate_limit_error", "code": "check_busy",
			"message": "another clip check is running; one runs at a time: retry after the Retry-After seconds"}})
		return
	case err != nil:
		return // the client is gone
	}
	defer release()
	var clips []clip.Clip
	var paths []string
	dec := clip.Decoder{FFmpeg: h.cfg.FFmpeg, MaxDuration: time.Duration(clip.MaxTotal) * time.Second / clip.SampleRate}
	for _, g := range got {
		a, msg := decodeClip(r.Context(), dec, g.path)
		if msg != "" {
			writeJSON(w, http.StatusOK, Checked{Clips: []CheckedClip{}, Warnings: []clip.Warning{}, Error: g.name + ": " + msg, Transcription: h.cfg.Transcribe != nil})
			return
		}
		clips = append(clips, clip.Clip{Name: g.name, Audio: a})
		paths = append(paths, g.path)
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

// received is a clip of a check on disk.
type received struct {
	name string // "clip 2 (take2.wav)"
	path string
}

// receive reads a check's multipart body (r.Body, read under body's
// limits) to files in dir: its clip files,
// each at most MaxClipBytes, and its transcripts. A request it refuses is
// answered here (refused); a clip it cannot keep is the check's answer.
func (h *Handler) receive(w http.ResponseWriter, r *http.Request, body *upload.Body, dir string) (got []received, texts []string, refused bool) {
	refuse := func(code int, kind, msg string) ([]received, []string, bool) {
		if ue := body.Err(); ue != nil {
			code, kind, msg = http.StatusRequestTimeout, ue.Code(), ue.Error()
		}
		w.Header().Set("Connection", "close") // the rest of the body is not read
		writeErr(w, code, kind, msg)
		return nil, nil, true
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return refuse(http.StatusBadRequest, "invalid_request", "send the clips as multipart/form-data, files named clip: "+err.Error())
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return refuse(h.readErr("reading the clips", err))
		}
		if part.FormName() == "transcript" {
			b, err := io.ReadAll(io.LimitReader(part, 64<<10))
			part.Close()
			if err != nil {
				return refuse(h.readErr("reading a transcript", err))
			}
			texts = append(texts, string(b))
			continue
		}
		if part.FormName() != "clip" {
			part.Close()
			continue
		}
		name := fmt.Sprintf("clip %d", len(got)+1)
		if fn := part.FileName(); fn != "" {
			name += " (" + filepath.Base(fn) + ")"
		}
		if len(got) == h.cfg.MaxClips {
			part.Close()
			return refuse(http.StatusBadRequest, "invalid_request", fmt.Sprintf("more than %d clips: a voice keeps at most %d references", h.cfg.MaxClips, h.cfg.MaxClips))
		}
		path, msg, err := h.savePart(part, dir)
		part.Close()
		if err != nil {
			return refuse(h.readErr(name, err))
		}
		if msg != "" {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusOK, Checked{Clips: []CheckedClip{}, Warnings: []clip.Warning{}, Error: name + ": " + msg, Transcription: h.cfg.Transcribe != nil})
			return nil, nil, true
		}
		got = append(got, received{name: name, path: path})
	}
	if len(got) == 0 {
		return refuse(http.StatusBadRequest, "invalid_request", "send one or more files named clip")
	}
	return got, texts, false
}

// readErr is the answer to an error reading a check's body: 408 past the
// upload's time limits, 413 past its size, else 400.
func (h *Handler) readErr(what string, err error) (int, string, string) {
	var ue *upload.Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ue):
		return http.StatusRequestTimeout, ue.Code(), ue.Error()
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "upload_too_large", fmt.Sprintf("the clips are over %d bytes, the limit for a check (drama serve --max-upload-bytes)", h.cfg.MaxRequestBytes)
	}
	return http.StatusBadRequest, "invalid_request", what + ": " + err.Error()
}

// savePart writes one clip part to a file in dir: msg says why the clip
// cannot be kept (too large, empty), err is an error reading the body.
func (h *Handler) savePart(part io.Reader, dir string) (path, msg string, err error) {
	f, err := os.CreateTemp(dir, "clip-*")
	if err != nil {
		return "", "cannot store it: " + err.Error(), nil
	}
	n, err := io.Copy(f, io.LimitReader(part, h.cfg.MaxClipBytes+1))
	if cerr := f.Close(); err == nil && cerr != nil {
		return "", "cannot store it: " + cerr.Error(), nil
	}
	switch {
	case err != nil:
		return "", "", err
	case n > h.cfg.MaxClipBytes:
		return "", fmt.Sprintf("over %d bytes, the limit for one clip (drama serve --max-clip-bytes)", h.cfg.MaxClipBytes), nil
	case n == 0:
		return "", "empty", nil
	}
	return f.Name(), "", nil
}

// decodeClip decodes a received clip; msg says why it cannot be, in words
// that name no path of the server.
func decodeClip(ctx context.Context, dec clip.Decoder, path string) (*clip.Audio, string) {
	a, err := dec.Decode(ctx, path)
	if err != nil {
		var fe *clip.FormatError
		if errors.As(err, &fe) && fe.Name == path {
			fe.Name = ""
		}
		return nil, strings.ReplaceAll(err.Error(), path, "the clip")
	}
	return a, ""
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, kind, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]string{"message": msg, "type": "invalid_request_error", "code": kind}})
}
