package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/drama-tts/drama/engine"
)

// VoiceInfo is one voice as GET /v1/voices lists it.
type VoiceInfo struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Origin     string  `json:"origin"` // "engine" or "clone"
	Source     string  `json:"source,omitempty"`
	References int     `json:"references"`
	Frames     int     `json:"frames"`
	Seconds    float64 `json:"seconds"`
}

// CloneClip is one recording sent to POST /v1/voices.
type CloneClip struct {
	Filename   string
	Data       []byte
	Transcript string
}

// CloneRequest is a POST /v1/voices request.
type CloneRequest struct {
	ID, Name         string
	Source           string // self, consented or synthetic
	ConsentWho       string
	ConsentStatement string
	Clips            []CloneClip
}

// ErrVoiceNotFound is returned by a VoiceStore for an unknown id.
var ErrVoiceNotFound = errors.New("voice not found")

// VoiceStore holds the cloned voices of a root. Errors from Clone that are
// the request's fault should be engine.ErrInvalid kinds.
type VoiceStore interface {
	// List returns the cloned voices.
	List(ctx context.Context) ([]VoiceInfo, error)
	// References returns a cloned voice's references, for engines that
	// take references in a request.
	References(ctx context.Context, id string) ([]engine.Reference, error)
	// Clone prepares and encodes the clips and saves the voice (mode 0600).
	Clone(ctx context.Context, req CloneRequest) (VoiceInfo, error)
	// Delete removes a cloned voice.
	Delete(ctx context.Context, id string) error
}

// maxCloneBytes bounds a POST /v1/voices body.
const maxCloneBytes = 256 << 20

func (s *Server) engineVoiceList(ctx context.Context) ([]VoiceInfo, error) {
	list, err := s.cfg.Engine.Voices(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]VoiceInfo, 0, len(list))
	for _, v := range list {
		out = append(out, VoiceInfo{ID: v.ID, Name: v.Name, Origin: "engine", Source: v.Source, References: v.References,
			Frames: v.Frames, Seconds: float64(v.Frames) * engine.SamplesPerFrame / engine.SampleRate})
	}
	return out, nil
}

func (s *Server) allVoices(ctx context.Context) ([]VoiceInfo, error) {
	out, err := s.engineVoiceList(ctx)
	if err != nil {
		return nil, err
	}
	if s.cfg.Voices != nil {
		clones, err := s.cfg.Voices.List(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, clones...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// knownVoice reports whether id is served.
func (s *Server) knownVoice(id string) bool { return s.voiceOrigin(id) != "" }

// voiceOrigin returns "engine", "clone" or "" for an unknown voice, caching
// the list for a second.
func (s *Server) voiceOrigin(id string) string {
	s.voicesMu.Lock()
	defer s.voicesMu.Unlock()
	if s.engineVoices == nil || time.Since(s.voicesAt) > time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		list, err := s.allVoices(ctx)
		if err != nil {
			return s.engineVoices[id]
		}
		s.engineVoices = map[string]string{}
		for _, v := range list {
			if s.engineVoices[v.ID] == "" {
				s.engineVoices[v.ID] = v.Origin
			}
		}
		s.voicesAt = time.Now()
	}
	return s.engineVoices[id]
}

func (s *Server) forgetVoices() {
	s.voicesMu.Lock()
	s.engineVoices = nil
	s.voicesMu.Unlock()
}

func (s *Server) handleListVoices(w http.ResponseWriter, r *http.Request) {
	list, err := s.allVoices(r.Context())
	if err != nil {
		writeError(w, fromEngine(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
}

func (s *Server) handleCreateVoice(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Voices == nil {
		writeError(w, &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "cloning_unavailable", Message: "cloning is not available on this server"})
		return
	}
	req, e := parseClone(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	info, err := s.cfg.Voices.Clone(r.Context(), *req)
	if err != nil {
		writeError(w, cloneError(err))
		return
	}
	s.forgetVoices()
	writeJSON(w, http.StatusCreated, info)
}

// resolveClone turns a request for a cloned voice into the engine's default
// voice with the clone's references after the request's own.
func (s *Server) resolveClone(ctx context.Context, req *speech) *apiError {
	if req.Voice == "" || s.voiceOrigin(req.Voice) != "clone" {
		return nil
	}
	if !s.capabilities().References {
		return badRequest("voice", "voice %q is a clone this engine has not published: restart drama serve to load it", req.Voice)
	}
	refs, err := s.cfg.Voices.References(ctx, req.Voice)
	if err != nil {
		return fromEngine(err)
	}
	req.References = append(req.References, refs...)
	req.Voice = ""
	return nil
}

func parseClone(w http.ResponseWriter, r *http.Request) (*CloneRequest, *apiError) {
	r.Body = http.MaxBytesReader(w, r.Body, maxCloneBytes)
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		return nil, badRequest("", "send the clone as multipart/form-data (fields name, consent_who, consent_statement, source; files clip with a transcript field each): %v", err)
	}
	form := r.MultipartForm
	get := func(k string) string {
		if v := form.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	req := &CloneRequest{ID: get("id"), Name: get("name"), Source: get("source"), ConsentWho: get("consent_who"), ConsentStatement: get("consent_statement")}
	if req.Source == "" {
		req.Source = "consented"
	}
	if req.Source != "synthetic" && (req.ConsentWho == "" || req.ConsentStatement == "") {
		return nil, badRequest("consent_statement", "a cloned voice needs consent: give consent_who and consent_statement (or source=synthetic)")
	}
	files, texts := form.File["clip"], form.Value["transcript"]
	if len(files) == 0 || len(files) != len(texts) {
		return nil, badRequest("clip", "send one or more clip files, each with a transcript field (got %d clips, %d transcripts)", len(files), len(texts))
	}
	for i, fh := range files {
		f, err := fh.Open()
		if err != nil {
			return nil, badRequest("clip", "clip %d: %v", i, err)
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, badRequest("clip", "clip %d: %v", i, err)
		}
		req.Clips = append(req.Clips, CloneClip{Filename: fh.Filename, Data: data, Transcript: texts[i]})
	}
	return req, nil
}

func (s *Server) handleDeleteVoice(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Voices == nil {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "voice_not_found", Message: "no cloned voices on this server"})
		return
	}
	err := s.cfg.Voices.Delete(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, ErrVoiceNotFound):
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "id", Code: "voice_not_found", Message: "no cloned voice " + r.PathValue("id") + ": engine voices cannot be deleted here"})
	case err != nil:
		writeError(w, fromEngine(err))
	default:
		s.forgetVoices()
		writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "deleted": true})
	}
}

// cloneError maps a failed clone: as fromEngine, except that a failure is
// a 500 in the encoder's words, since a failed encode restarts nothing.
func cloneError(err error) *apiError {
	if kind, _ := engine.KindOf(err); kind == engine.KindFailed && !errors.As(err, new(*apiError)) {
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "clone_failed", Message: "cloning failed: " + err.Error()}
	}
	return fromEngine(err)
}
