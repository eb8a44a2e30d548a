package httpapi

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi/apikey"
)

// VoiceInfo is one voice as GET /v1/voices lists it.
type VoiceInfo struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Origin  string `json:"origin"` // "engine", "clone", "builtin" or "alias"
	AliasOf string `json:"alias_of,omitempty"`
	Source  string `json:"source,omitempty"`
	// Consent is a clone's consent: who gave it, when, in what words.
	Consent    *VoiceConsent `json:"consent,omitempty"`
	References int           `json:"references"`
	Frames     int           `json:"frames"`
	Seconds    float64       `json:"seconds"`
	// CatalogName is a clone's name in a catalog engine's catalog.
	CatalogName string `json:"catalog_name,omitempty"`
	// EngineRestart, in the reply to a clone, tells that the request
	// restarted the engine to load the voice.
	EngineRestart *EngineRestart `json:"engine_restart,omitempty"`
	// Description, Created and Updated are a voice's note, when it was
	// made and when its file last changed, as far as its store keeps them
	// (for Fish Audio's /model routes).
	Description string    `json:"-"`
	Created     time.Time `json:"-"`
	Updated     time.Time `json:"-"`
}

// VoiceConsent is the consent recorded in a cloned voice.
type VoiceConsent struct {
	Who       string    `json:"who"`
	When      time.Time `json:"when"`
	Statement string    `json:"statement"`
}

// CloneClip is one recording sent to POST /v1/voices: its bytes in a file
// (Path, as uploads arrive) or in memory (Data).
type CloneClip struct {
	Filename   string
	Path       string // the clip's bytes on disk; removed by the server after Clone returns
	Data       []byte // the clip's bytes, when Path is empty
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

// ErrVoiceExists marks a clone refused because its id is taken: by a voice
// made before, or by another clone that finished first, on this host or on
// another sharing the store. It is answered 409.
var ErrVoiceExists = errors.New("voice exists")

// VoiceLookup is a VoiceStore other hosts may share (drama serve
// --voice-store): Lookup reads the store itself, not a list held in
// memory, for whether clone id is there now. A voice the server's list
// lacks is looked up before a request naming it is refused (another host
// may have just made it), and one the list holds is looked up before it
// is spoken (another host may have just deleted it).
type VoiceLookup interface {
	Lookup(ctx context.Context, id string) bool
}

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

func (s *Server) engineVoiceList(ctx context.Context) ([]VoiceInfo, error) {
	list, err := s.pool.Any().Voices(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]VoiceInfo, 0, len(list))
	for _, v := range list {
		if s.catalogName(v.ID) {
			continue // a clone, listed as one
		}
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
	out = append(out, s.namedVoices(out)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// voiceOrigin returns "engine", "clone", "builtin", "alias" or "" for an
// unknown voice, from the list cached for a second; a clone, or a name
// the list lacks, is looked up in a shared store (VoiceLookup) first.
func (s *Server) voiceOrigin(id string) string {
	origin := s.listedOrigin(id)
	lk, ok := s.cfg.Voices.(VoiceLookup)
	if !ok || (origin != "" && origin != "clone") {
		return origin
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	found := lk.Lookup(ctx, id)
	switch {
	case found && origin == "":
		s.forgetVoices() // made elsewhere since the list was read
		return "clone"
	case !found && origin == "clone":
		s.forgetVoices() // deleted elsewhere
		return ""
	}
	return origin
}

// listedOrigin is voiceOrigin from the list alone, caching it for a
// second.
func (s *Server) listedOrigin(id string) string {
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
	if key, keyed := requestKey(r.Context()); keyed && !key.Scope.Allows(apikey.Admin) {
		// who consented, and in what words, is for admin keys
		for i := range list {
			list[i].Consent = nil
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
}

func (s *Server) handleCreateVoice(w http.ResponseWriter, r *http.Request) {
	if info, ok := s.cloneUpload(w, r, s.parseClone, writeError); ok {
		writeJSON(w, http.StatusCreated, info)
	}
}

// cloneUpload is a clone from an upload, POST /v1/voices' and Fish's POST
// /model alike: the whole upload read by parse into a directory of its
// own, on disk before the request waits for the clone slot (a slow upload
// holds its own connection, never the slot), then the clone; fail writes
// an error in the route's own shape. ok is false once an error is written.
func (s *Server) cloneUpload(w http.ResponseWriter, r *http.Request, parse func(http.ResponseWriter, *http.Request, string) (*CloneRequest, *apiError), fail func(http.ResponseWriter, *apiError)) (_ VoiceInfo, ok bool) {
	if s.cfg.Voices == nil {
		fail(w, &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "cloning_unavailable", Message: "cloning is not available on this server"})
		return VoiceInfo{}, false
	}
	dir, err := s.uploadDir()
	if err != nil {
		fail(w, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "upload_failed", Message: "cannot store the upload: " + err.Error()})
		return VoiceInfo{}, false
	}
	defer os.RemoveAll(dir)
	req, e := parse(w, r, dir)
	if e != nil {
		w.Header().Set("Connection", "close") // the rest of the body is not read
		fail(w, e)
		return VoiceInfo{}, false
	}
	release, e := s.cloneTurn(r.Context())
	if e != nil {
		fail(w, e)
		return VoiceInfo{}, false
	}
	defer release()
	info, e := s.clone(r.Context(), req)
	if e != nil {
		fail(w, e)
		return VoiceInfo{}, false
	}
	return info, true
}

// clone makes the voice req asks for, the caller holding the clone slot,
// and publishes it to a catalog engine's catalog.
func (s *Server) clone(ctx context.Context, req *CloneRequest) (VoiceInfo, *apiError) {
	info, err := s.cfg.Voices.Clone(ctx, *req)
	if err != nil {
		return VoiceInfo{}, cloneError(err)
	}
	s.forgetVoices()
	if e := s.loadForClone(ctx, &info); e != nil {
		return VoiceInfo{}, e
	}
	return info, nil
}

// resolveClone turns a request for a cloned voice into one the engine
// serves: the engine's default voice with the clone's references after the
// request's own, or on a catalog engine the clone's catalog name. load is
// the clone to publish (restarting the engine) once the request holds the
// engine, when the running catalog lacks it.
func (s *Server) resolveClone(ctx context.Context, req *speech) (load string, e *apiError) {
	if req.Voice == "" || s.voiceOrigin(req.Voice) != "clone" {
		return "", nil
	}
	if !s.capabilities().References {
		cs, ok := s.catalog()
		if !ok {
			return "", badRequest("voice", "voice %q is a clone this engine has not published: restart drama serve to load it", req.Voice)
		}
		id := req.Voice
		name, live, err := cs.Spoken(ctx, id)
		if err != nil {
			return "", s.cloneGone(req.Voice, err)
		}
		req.Voice = name
		if !live {
			return id, nil
		}
		return "", nil
	}
	refs, err := s.cfg.Voices.References(ctx, req.Voice)
	if err != nil {
		return "", s.cloneGone(req.Voice, err)
	}
	req.References = append(req.References, refs...)
	req.Voice = ""
	return "", nil
}

func (s *Server) handleDeleteVoice(w http.ResponseWriter, r *http.Request) {
	if e := s.deleteClone(r.Context(), r.PathValue("id")); e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "deleted": true})
}

// deleteClone removes cloned voice id; other voices are not removed here.
func (s *Server) deleteClone(ctx context.Context, id string) *apiError {
	if s.cfg.Voices == nil {
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "voice_not_found", Message: "no cloned voices on this server"}
	}
	err := s.cfg.Voices.Delete(ctx, id)
	switch {
	case errors.Is(err, ErrVoiceNotFound):
		return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "id", Code: "voice_not_found", Message: "no cloned voice " + id + ": engine voices cannot be deleted here"}
	case err != nil:
		return fromEngine(err)
	}
	s.forgetVoices()
	return nil
}

// cloneGone answers a clone's references or catalog name that could not be
// read: a clone deleted (on another host sharing the store) between the
// look that found it and the read is an unknown voice, as it is on the
// host that deleted it.
func (s *Server) cloneGone(id string, err error) *apiError {
	if !errors.Is(err, ErrVoiceNotFound) {
		return fromEngine(err)
	}
	s.forgetVoices()
	if _, e := s.resolveVoice(id); e != nil {
		return e // the answer for a voice not served, in its words
	}
	return unknownVoice(id)
}

// cloneError maps a failed clone: as fromEngine, except that a failure is
// a 500 in the encoder's words, since a failed encode restarts nothing.
func cloneError(err error) *apiError {
	if errors.Is(err, ErrVoiceExists) {
		return &apiError{Status: http.StatusConflict, Type: "invalid_request_error", Param: "id", Code: "voice_exists", Message: err.Error()}
	}
	if kind, _ := engine.KindOf(err); kind == engine.KindFailed && !errors.As(err, new(*apiError)) {
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "clone_failed", Message: "cloning failed: " + err.Error()}
	}
	return fromEngine(err)
}
