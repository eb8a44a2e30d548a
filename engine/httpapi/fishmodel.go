package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine/httpapi/apikey"
)

// fishRoutes registers Fish Audio's API: speech (POST /v1/tts and the
// WebSocket /v1/tts/live) and the voices as models (/model).
func (s *Server) fishRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/tts", s.handleTTS)
	mux.HandleFunc("GET /v1/tts/live", s.handleLive)
	mux.HandleFunc("GET /model", s.handleListModels)
	mux.HandleFunc("POST /model", s.handleCreateModel)
	mux.HandleFunc("GET /model/{id}", s.handleGetModel)
	mux.HandleFunc("PATCH /model/{id}", s.handleUpdateModel)
	mux.HandleFunc("DELETE /model/{id}", s.handleDeleteModel)
}

// ModelEntity is a voice as Fish Audio's /model routes show it, filled
// from what drama knows: what it does not keep (cover images, tags, likes)
// is empty or zero, never made up.
type ModelEntity struct {
	ID          string      `json:"_id"`
	Type        string      `json:"type"` // tts
	Title       string      `json:"title"`
	Description string      `json:"description"`
	CoverImage  string      `json:"cover_image"`
	State       string      `json:"state"` // trained: every voice served speaks
	Tags        []string    `json:"tags"`
	CreatedAt   string      `json:"created_at"` // RFC 3339; empty when drama does not know
	UpdatedAt   string      `json:"updated_at"`
	Visibility  string      `json:"visibility"` // private: seen by this server's clients only
	LikeCount   int         `json:"like_count"`
	MarkCount   int         `json:"mark_count"`
	SharedCount int         `json:"shared_count"`
	TaskCount   int         `json:"task_count"`
	Author      ModelAuthor `json:"author"`
	// Drama is the voice as GET /v1/voices lists it.
	Drama VoiceInfo `json:"drama"`
}

// ModelAuthor is a ModelEntity's author: the API key the request carries,
// or on a server without keys the server (its host name).
type ModelAuthor struct {
	ID       string `json:"_id"`
	Nickname string `json:"nickname"`
	Avatar   string `json:"avatar"`
}

// author names the author of the voices a request sees: the name of the
// API key it carries, else this server's host name.
func (s *Server) author(r *http.Request) ModelAuthor {
	if key, keyed := requestKey(r.Context()); keyed {
		return ModelAuthor{ID: key.Name, Nickname: key.Name}
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "drama-serve"
	}
	return ModelAuthor{ID: name, Nickname: name}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// entity is voice v as Fish's ModelEntity, for request r: who consented to
// a clone, and in what words, is shown to admin keys only (as GET
// /v1/voices shows it).
func (s *Server) entity(r *http.Request, v VoiceInfo, author ModelAuthor) ModelEntity {
	if key, keyed := requestKey(r.Context()); keyed && !key.Scope.Allows(apikey.Admin) {
		v.Consent = nil
	}
	title := v.Name
	if title == "" {
		title = v.ID
	}
	return ModelEntity{ID: v.ID, Type: "tts", Title: title, Description: v.Description, State: "trained", Tags: []string{},
		CreatedAt: stamp(v.Created), UpdatedAt: stamp(v.Updated), Visibility: "private", Author: author, Drama: v}
}

// modelVoices are the voices GET /model lists: the engine's, the clones
// and the built-in voice (aliases are other names of these).
func (s *Server) modelVoices(ctx context.Context) ([]VoiceInfo, *apiError) {
	all, err := s.allVoices(ctx)
	if err != nil {
		return nil, fromEngine(err)
	}
	return slices.DeleteFunc(all, func(v VoiceInfo) bool { return v.Origin == "alias" }), nil
}

// fishError answers a refusal of a /model route as Fish's SDK expects
// one: a 422 (its UnprocessableEntityError).
func fishError(w http.ResponseWriter, e *apiError) {
	writeError(w, (&speech{fields: map[string]string{"clip": "voices"}}).refusal(e))
}

// handleListModels is GET /model: Fish's voices.search, one page of the
// voices served, filtered by title (a part of the title or id, any case),
// self (the clones, which are this server's own), tag (drama keeps no
// tags: a tag matches nothing) and author_id, sorted by sort_by.
func (s *Server) handleListModels(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, e := queryInt(q.Get("page_size"), "page_size", 10, 1, 100)
	if e != nil {
		fishError(w, e)
		return
	}
	page, e := queryInt(q.Get("page_number"), "page_number", 1, 1, 1<<20)
	if e != nil {
		fishError(w, e)
		return
	}
	self := false
	if v := q.Get("self"); v != "" {
		if self, e = queryBool(v, "self"); e != nil {
			fishError(w, e)
			return
		}
	}
	sortBy := q.Get("sort_by")
	if sortBy != "" && sortBy != "score" && sortBy != "task_count" && sortBy != "created_at" {
		fishError(w, badRequest("sort_by", "unknown sort_by %q: use score, task_count or created_at", sortBy))
		return
	}
	list, e := s.modelVoices(r.Context())
	if e != nil {
		writeError(w, e)
		return
	}
	author := s.author(r)
	title := strings.ToLower(q.Get("title"))
	tagged := false // tag=x, or tag[0]=x as the SDK sends a list
	for k := range q {
		tagged = tagged || k == "tag" || strings.HasPrefix(k, "tag[")
	}
	items := []ModelEntity{}
	for _, v := range list {
		m := s.entity(r, v, author)
		switch {
		case tagged, self && v.Origin != "clone",
			q.Get("author_id") != "" && q.Get("author_id") != author.ID,
			title != "" && !strings.Contains(strings.ToLower(m.Title), title) && !strings.Contains(strings.ToLower(m.ID), title):
			continue
		}
		items = append(items, m)
	}
	if sortBy == "created_at" { // newest first; voices of unknown age last
		slices.SortStableFunc(items, func(a, b ModelEntity) int { return strings.Compare(b.CreatedAt, a.CreatedAt) })
	}
	total := len(items)
	from := min((page-1)*size, total)
	writeJSON(w, http.StatusOK, map[string]any{"total": total, "items": items[from:min(from+size, total)]})
}

func queryInt(v, name string, def, lo, hi int) (int, *apiError) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest(name, "%s %q: want a whole number from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

func queryBool(v, name string) (bool, *apiError) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest(name, "%s %q: want true or false", name, v)
	}
	return b, nil
}

// findModel returns voice id as GET /model lists it, or a 404.
func (s *Server) findModel(ctx context.Context, id string) (VoiceInfo, *apiError) {
	list, e := s.modelVoices(ctx)
	if e != nil {
		return VoiceInfo{}, e
	}
	for _, v := range list {
		if v.ID == id {
			return v, nil
		}
	}
	return VoiceInfo{}, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "id", Code: "voice_not_found",
		Message: "no voice " + strconv.Quote(id) + ": GET /model lists the voices served"}
}

// handleGetModel is GET /model/{id}: Fish's voices.get.
func (s *Server) handleGetModel(w http.ResponseWriter, r *http.Request) {
	v, e := s.findModel(r.Context(), r.PathValue("id"))
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, s.entity(r, v, s.author(r)))
}

// handleDeleteModel is DELETE /model/{id}: Fish's voices.delete, under
// the rules of DELETE /v1/voices/{id} (clones only).
func (s *Server) handleDeleteModel(w http.ResponseWriter, r *http.Request) {
	if e := s.deleteClone(r.Context(), r.PathValue("id")); e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// VoiceEdit is a change to a cloned voice: each field set is replaced.
type VoiceEdit struct {
	Name *string
}

// VoiceEditor is a VoiceStore whose clones can be renamed (PATCH
// /model/{id}).
type VoiceEditor interface {
	// Edit changes clone id (ErrVoiceNotFound when there is none) and
	// returns it as it is now.
	Edit(ctx context.Context, id string, edit VoiceEdit) (VoiceInfo, error)
}

// noDescription refuses a description, which a cloned voice's file has no
// place for.
const noDescription = "a cloned voice keeps no description (its file holds its name, consent and references): omit description, and say what you need in the title"

// maxEditBytes bounds a PATCH /model/{id} body: a title and a description.
const maxEditBytes = 1 << 20

// handleUpdateModel is PATCH /model/{id}: Fish's voices.update, which
// changes a clone's title (a form, as the SDK sends it). The cloned
// voice's file has no place for a description: one is refused.
func (s *Server) handleUpdateModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ed, ok := s.cfg.Voices.(VoiceEditor)
	if !ok {
		writeError(w, &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "editing_unavailable", Message: "this server keeps no cloned voices to edit"})
		return
	}
	fields, e := readSmallForm(w, r)
	if e != nil {
		fishError(w, e)
		return
	}
	var edit VoiceEdit
	for name, v := range fields {
		switch name {
		case "title":
			if strings.TrimSpace(v) == "" {
				fishError(w, badRequest("title", "title is empty: give the voice a name"))
				return
			}
			edit.Name = &v
		case "description":
			if v != "" {
				fishError(w, badRequest("description", noDescription))
				return
			}
		case "visibility":
			if v != "private" {
				fishError(w, badRequest("visibility", "visibility %q is not kept: a voice of drama serve is private to the server's clients (omit visibility or send private)", v))
				return
			}
		case "tags":
			if v != "" {
				fishError(w, badRequest("tags", "drama keeps no tags on a voice: omit tags"))
				return
			}
		default:
			fishError(w, badRequest(name, "unknown field %q: a voice's title and description can be changed", name))
			return
		}
	}
	if _, e := s.findModel(r.Context(), id); e != nil {
		writeError(w, e)
		return
	}
	_, err := ed.Edit(r.Context(), id, edit)
	switch {
	case errors.Is(err, ErrVoiceNotFound):
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "id", Code: "voice_not_found", Message: "no cloned voice " + id + ": engine voices cannot be edited here"})
	case err != nil:
		writeError(w, cloneError(err))
	default:
		s.forgetVoices()
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

// readSmallForm reads a form of text fields only (multipart or URL
// encoded), at most maxEditBytes.
func readSmallForm(w http.ResponseWriter, r *http.Request) (map[string]string, *apiError) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	r.Body = http.MaxBytesReader(w, r.Body, maxEditBytes)
	switch mt {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(maxEditBytes); err != nil {
			return nil, badRequest("", "reading the form: %v", err)
		}
		for name := range r.MultipartForm.File {
			return nil, badRequest(name, "%s: drama keeps no files with a voice here (a cover image, say): omit it", name)
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, badRequest("", "reading the form: %v", err)
		}
	default:
		_, _ = io.Copy(io.Discard, r.Body)
		return nil, badRequest("", "send the fields as a form (multipart/form-data)")
	}
	out := map[string]string{}
	for k, v := range r.PostForm {
		if len(v) > 0 {
			out[k] = v[0]
		}
	}
	return out, nil
}

// handleCreateModel is POST /model: Fish's voices.ivc.create, a clone
// made as POST /v1/voices makes one (the same pipeline, limits and clone
// slot), with the consent taken from headers (consentOf).
func (s *Server) handleCreateModel(w http.ResponseWriter, r *http.Request) {
	// fishError changes only a 400 (to Fish's 422), so the slot's 429 and
	// the server's 5xx are as on POST /v1/voices
	if info, ok := s.cloneUpload(w, r, s.parseModelCreate, fishError); ok {
		writeJSON(w, http.StatusCreated, s.entity(r, info, s.author(r)))
	}
}

// modelForm is Fish's clone form (POST /model).
var modelForm = cloneFormSpec{clips: "voices", texts: "texts", tooMany: "recordings",
	hint: "send the voice as multipart/form-data (fields title, texts; files voices)",
	foreignFile: func(name string) string {
		return fmt.Sprintf("%s: drama keeps no files with a voice but its recordings (voices): omit it", name)
	}}

// parseModelCreate reads Fish's clone form (readCloneForm): the
// recordings (voices) into dir under the upload limits, the text fields
// into memory. texts are the recordings'
// words in order: one field each, or (as Fish's TypeScript SDK sends a
// list) one field of them joined by commas.
func (s *Server) parseModelCreate(w http.ResponseWriter, r *http.Request, dir string) (*CloneRequest, *apiError) {
	fields, files, texts, e := s.readCloneForm(w, r, dir, modelForm)
	if e != nil {
		return nil, e
	}
	if e := checkModelFields(fields); e != nil {
		return nil, e
	}
	req := &CloneRequest{Name: fields["title"]}
	req.Source, req.ConsentWho, req.ConsentStatement = consentOf(r, fields)
	if req.Source == "" {
		req.Source = "consented"
	}
	if req.Source != "synthetic" && (req.ConsentWho == "" || req.ConsentStatement == "") {
		return nil, badRequest("consent", "%s (in requestOptions.headers), or form fields of the same names", consentAdvice("POST /model"))
	}
	if len(files) == 0 {
		return nil, badRequest("voices", "send one or more recordings (voices), with their words (texts)")
	}
	if len(texts) == 1 && len(files) > 1 {
		texts = strings.Split(texts[0], ",")
		if len(texts) != len(files) {
			return nil, badRequest("texts", "texts came as one field for %d recordings and holds %d comma-separated parts: send one texts field per recording (a transcript may hold commas then)", len(files), len(texts))
		}
	}
	switch {
	case len(texts) == 0:
		texts = make([]string, len(files)) // transcribed, or refused, by the clone
	case len(texts) != len(files):
		return nil, badRequest("texts", "%d texts for %d recordings: send the words of each recording, in order", len(texts), len(files))
	}
	for i := range files {
		files[i].Transcript = strings.TrimSpace(texts[i])
	}
	req.Clips = files
	return req, nil
}

// checkModelFields refuses the fields of Fish's clone form that drama
// cannot honour; those it has no use for (train_mode fast,
// enhance_audio_quality: every recording is trimmed and levelled) pass.
func checkModelFields(f map[string]string) *apiError {
	for name, v := range f {
		switch name {
		case "description":
			if v != "" {
				return badRequest("description", noDescription)
			}
		case "title", "enhance_audio_quality", HeaderConsentWho, HeaderConsentStatement, HeaderVoiceSource, "consent_who", "consent_statement", "source":
		case "type":
			if v != "tts" {
				return badRequest("type", "type %q: drama makes tts voices only", v)
			}
		case "train_mode":
			if v != "fast" {
				return badRequest("train_mode", "train_mode %q: a drama clone is made of references at once (fast); there is no training", v)
			}
		case "visibility":
			if v != "private" {
				return badRequest("visibility", "visibility %q is not kept: a voice of drama serve is private to the server's clients (omit visibility or send private)", v)
			}
		case "tags":
			if v != "" {
				return badRequest("tags", "drama keeps no tags on a voice: omit tags")
			}
		default:
			return badRequest(name, "unknown field %q: docs/fish-api.md lists the fields POST /model takes", name)
		}
	}
	if strings.TrimSpace(f["title"]) == "" {
		return badRequest("title", "title is required: the voice's name (its id is made from it)")
	}
	return nil
}
