package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine/httpapi/upload"
)

// Default limits of POST /v1/voices.
const (
	DefaultMaxClipBytes   = 64 << 20  // one clip file
	DefaultMaxUploadBytes = 256 << 20 // a whole request
	DefaultMaxClips       = 8         // clips in a request, as a voice keeps at most 8 references
	DefaultCloneWait      = 10 * time.Second
	maxFieldBytes         = 64 << 10 // a text field (name, transcript, consent)
)

// DefaultUploadTimeout bounds the time a whole clone request's upload may
// take (drama serve --upload-timeout).
const DefaultUploadTimeout = upload.DefaultTimeout

// UploadLimits bound POST /v1/voices. Parts are written to files under Dir
// as they arrive (never held in memory), the whole request within Timeout;
// only then does the request wait for the one clone slot (one clone runs
// at a time), and every file of a request is removed when it ends,
// whatever the outcome. The page's clip check (POST /ui/clip-check) is
// received and waits the same way.
type UploadLimits struct {
	// Dir holds the parts of the clone being made (default: the system's
	// temporary directory; drama serve uses <root>/.drama/uploads).
	Dir string
	// MaxClipBytes bounds one clip file (default DefaultMaxClipBytes).
	MaxClipBytes int64
	// MaxRequestBytes bounds a whole request (default DefaultMaxUploadBytes).
	MaxRequestBytes int64
	// MaxClips bounds the clips of a request (default DefaultMaxClips).
	MaxClips int
	// Wait is how long a clone, once received, waits for the one running
	// before a 429 (default DefaultCloneWait; negative: no wait).
	Wait time.Duration
	// Timeout is how long a request's whole upload may take before a 408
	// (default DefaultUploadTimeout).
	Timeout time.Duration
}

func (u UploadLimits) withDefaults() UploadLimits {
	if u.Dir == "" {
		u.Dir = os.TempDir()
	}
	if u.MaxClipBytes <= 0 {
		u.MaxClipBytes = DefaultMaxClipBytes
	}
	if u.MaxRequestBytes <= 0 {
		u.MaxRequestBytes = DefaultMaxUploadBytes
	}
	if u.MaxClips <= 0 {
		u.MaxClips = DefaultMaxClips
	}
	if u.Wait == 0 {
		u.Wait = DefaultCloneWait
	}
	if u.Timeout <= 0 {
		u.Timeout = DefaultUploadTimeout
	}
	return u
}

// cloneTurn takes the one clone slot, waiting up to Uploads.Wait; past it
// the answer is a 429 with Retry-After from the clones measured so far.
// The request's upload is on disk by then.
func (s *Server) cloneTurn(ctx context.Context) (release func(), e *apiError) {
	release, err := s.cloneSlot.Take(ctx, s.cfg.Uploads.Wait)
	switch {
	case errors.Is(err, upload.ErrBusy):
		return nil, s.cloneBusy()
	case err != nil:
		return nil, clientClosed()
	}
	return release, nil
}

func (s *Server) cloneBusy() *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "clone_busy", RetryAfter: s.cloneSlot.Hold(),
		Message: "another voice is being cloned; one clone runs at a time: retry after the Retry-After seconds"}
}

// uploadDir makes a directory of its own for one request's parts.
func (s *Server) uploadDir() (string, error) {
	if err := os.MkdirAll(s.cfg.Uploads.Dir, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(s.cfg.Uploads.Dir, "clone-*")
}

func tooLarge(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Param: param, Code: "upload_too_large", Message: fmt.Sprintf(format, args...)}
}

// cloneFormSpec names the parts of one clone form: the file field of the
// clips, the text field of their words (in order), and what to say of a
// form that is not one.
type cloneFormSpec struct {
	clips, texts string
	// hint says how to send the form; tooMany and foreignFile what is
	// wrong with too many clips and with a file in another field.
	hint        string
	tooMany     string
	foreignFile func(name string) string
}

// readCloneForm reads a multipart clone form part by part: text fields of
// at most 64 KiB into memory (the first of each name kept; every text
// field of form.texts in order), clip files into dir, each under the
// limits, the whole body within Uploads.Timeout. POST /v1/voices and
// Fish's POST /model both read their forms here.
func (s *Server) readCloneForm(w http.ResponseWriter, r *http.Request, dir string, form cloneFormSpec) (fields map[string]string, files []CloneClip, texts []string, e *apiError) {
	lim := s.cfg.Uploads
	if r.ContentLength > lim.MaxRequestBytes {
		return nil, nil, nil, tooLarge("", "the request is %d bytes; the limit is %d (drama serve --max-upload-bytes)", r.ContentLength, lim.MaxRequestBytes)
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return nil, nil, nil, badRequest("", "%s", form.hint)
	}
	// every read must bring bytes within the stall timeout, and the whole
	// body must come within the upload timeout: a client that sends slowly
	// is cut, and holds no slot meanwhile
	body := upload.Receive(w, r, upload.Limits{MaxBytes: lim.MaxRequestBytes, Stall: s.cfg.StallTimeout, Timeout: lim.Timeout})
	defer func() {
		if ue := body.Err(); ue != nil && e != nil && e.Status != http.StatusRequestTimeout {
			e = uploadTimeout("", ue) // the reader above the body told it as another error
		}
	}()
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, nil, badRequest("", "%s: %v", form.hint, err)
	}
	fields = map[string]string{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, nil, readErr("", err, lim)
		}
		name := part.FormName()
		switch {
		case name == form.clips:
			if len(files) == lim.MaxClips {
				part.Close()
				return nil, nil, nil, badRequest(form.clips, "more than %d %s: a voice keeps at most %d references", lim.MaxClips, form.tooMany, lim.MaxClips)
			}
			c, e := saveClip(part, dir, len(files), lim)
			part.Close()
			if e != nil {
				return nil, nil, nil, e
			}
			files = append(files, c)
		case part.FileName() != "":
			part.Close()
			return nil, nil, nil, badRequest(name, "%s", form.foreignFile(name))
		default:
			v, e := readField(part, name, lim)
			part.Close()
			if e != nil {
				return nil, nil, nil, e
			}
			if name == form.texts {
				texts = append(texts, v)
			} else if _, dup := fields[name]; !dup {
				fields[name] = v
			}
		}
	}
	return fields, files, texts, nil
}

// voicesForm is POST /v1/voices' form.
var voicesForm = cloneFormSpec{clips: "clip", texts: "transcript", tooMany: "clips",
	hint:        "send the clone as multipart/form-data (fields name, consent_who, consent_statement, source; files clip with a transcript field each)",
	foreignFile: func(name string) string { return fmt.Sprintf("unexpected file field %q: only clip takes files", name) }}

// parseClone reads POST /v1/voices' form (readCloneForm); clip files and
// transcript fields pair up in order.
func (s *Server) parseClone(w http.ResponseWriter, r *http.Request, dir string) (*CloneRequest, *apiError) {
	fields, files, texts, e := s.readCloneForm(w, r, dir, voicesForm)
	if e != nil {
		return nil, e
	}
	req := &CloneRequest{ID: fields["id"], Name: fields["name"], Source: fields["source"], ConsentWho: fields["consent_who"], ConsentStatement: fields["consent_statement"]}
	if req.Source == "" {
		req.Source = "consented"
	}
	if req.Source != "synthetic" && (req.ConsentWho == "" || req.ConsentStatement == "") {
		return nil, badRequest("consent_statement", "a cloned voice needs consent: give consent_who and consent_statement (or source=synthetic)")
	}
	if len(texts) == 0 {
		texts = make([]string, len(files)) // no words: transcribed, or refused, by the clone
	}
	if len(files) == 0 || len(files) != len(texts) {
		return nil, badRequest("clip", "send one or more clip files, each with a transcript field (got %d clips, %d transcripts)", len(files), len(texts))
	}
	for i := range files {
		files[i].Transcript = texts[i]
	}
	req.Clips = files
	return req, nil
}

// saveClip writes one clip part to a file in dir, at most MaxClipBytes.
func saveClip(part *multipart.Part, dir string, i int, lim UploadLimits) (CloneClip, *apiError) {
	label := fmt.Sprintf("clip %d", i+1)
	if fn := part.FileName(); fn != "" {
		label += " (" + filepath.Base(fn) + ")"
	}
	f, err := os.CreateTemp(dir, "clip-*")
	if err != nil {
		return CloneClip{}, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "upload_failed", Message: "cannot store " + label + ": " + err.Error()}
	}
	n, err := io.Copy(f, io.LimitReader(part, lim.MaxClipBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return CloneClip{}, readErr("clip", fmt.Errorf("%s: %w", label, err), lim)
	case n > lim.MaxClipBytes:
		return CloneClip{}, tooLarge("clip", "%s is over %d bytes, the limit for one clip (drama serve --max-clip-bytes); a voice keeps 60 s of speech: cut the recording", label, lim.MaxClipBytes)
	case n == 0:
		return CloneClip{}, badRequest("clip", "%s is empty", label)
	}
	return CloneClip{Filename: part.FileName(), Path: f.Name()}, nil
}

func readField(part *multipart.Part, name string, lim UploadLimits) (string, *apiError) {
	b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return "", readErr(name, err, lim)
	}
	if len(b) > maxFieldBytes {
		return "", tooLarge(name, "field %s is over %d bytes", name, maxFieldBytes)
	}
	return string(b), nil
}

// uploadTimeout is the 408 of an upload past a time limit.
func uploadTimeout(param string, ue *upload.Error) *apiError {
	return &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Param: param, Code: ue.Code(), Message: ue.Error()}
}

// readErr maps an error reading the body: past the request's limit a 413,
// otherwise a 400.
func readErr(param string, err error, lim UploadLimits) *apiError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(param, "the request is over %d bytes, the limit for a clone request (drama serve --max-upload-bytes)", lim.MaxRequestBytes)
	}
	var ue *upload.Error
	if errors.As(err, &ue) {
		return uploadTimeout(param, ue)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "clip ") {
		msg = "reading the multipart body: " + msg
	}
	return badRequest(param, "%s", msg)
}
