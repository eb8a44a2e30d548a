package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/clone"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
	"github.com/drama-tts/drama/voices/store"
	"github.com/drama-tts/drama/voices/transcribe"
)

// voiceStore keeps the cloned voices of a root, or of every drama serve
// sharing --voice-store: one file per voice, <dir>/<id>.json, mode 0600.
type voiceStore struct {
	files   *store.Store
	enc     clone.Encoder
	install engine.Install
	// ready, if set, says whether the install can encode (its variant is
	// on the root); its error is the answer to a clone.
	ready func() error
	// transcriber transcribes clips sent without their words; nil refuses them.
	transcriber *transcribe.Client
}

// newVoiceStore returns the store of the voices in dir, which clones
// through enc (the supervised engine) with install; ready, if set, is asked
// before each clone whether the install can encode. Until its files are
// run (store.Store.Run), every listing reads the directory.
func newVoiceStore(dir string, enc clone.Encoder, install engine.Install, ready func() error) *voiceStore {
	return &voiceStore{files: store.New(dir, store.Options{}), enc: enc, install: install, ready: ready}
}

var (
	_ httpapi.VoiceStore     = (*voiceStore)(nil)
	_ httpapi.VoiceLookup    = (*voiceStore)(nil)
	_ httpapi.ReferenceMaker = (*voiceStore)(nil)
	_ httpapi.VoiceEditor    = (*voiceStore)(nil)
)

// List lists the voices of the store's index; files that do not parse are
// skipped (drama voice check names their problems).
func (s *voiceStore) List(ctx context.Context) ([]httpapi.VoiceInfo, error) {
	list, err := s.files.List()
	if err != nil {
		return nil, err
	}
	out := make([]httpapi.VoiceInfo, len(list))
	for i, v := range list {
		out[i] = info(v)
	}
	return out, nil
}

// Lookup says whether clone id is in the store now, reading the store
// itself: another drama serve sharing it may have made or deleted it.
func (s *voiceStore) Lookup(ctx context.Context, id string) bool {
	_, ok := s.files.Lookup(id)
	return ok
}

func info(v store.Summary) httpapi.VoiceInfo {
	vi := httpapi.VoiceInfo{ID: v.ID, Name: v.Name, Origin: "clone", Source: string(v.Source),
		References: v.References, Frames: v.Frames, Seconds: voices.Seconds(v.Frames),
		Description: v.Note, Created: v.Created, Updated: v.Updated}
	if c := v.Consent; c != nil {
		vi.Consent = &httpapi.VoiceConsent{Who: c.Who, When: c.When, Statement: c.Statement}
	}
	return vi
}

func (s *voiceStore) path(id string) (string, error) {
	p, err := s.files.Path(id)
	if err != nil {
		return "", fmt.Errorf("%w: %v", httpapi.ErrVoiceNotFound, err)
	}
	return p, nil
}

// notFound gives the store's ErrNotFound the API's.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %v", httpapi.ErrVoiceNotFound, err)
	}
	return err
}

// References returns a cloned voice's references, read from its file as
// it is now.
func (s *voiceStore) References(ctx context.Context, id string) ([]engine.Reference, error) {
	v, err := s.files.Read(id)
	if err != nil {
		return nil, fmt.Errorf("cloned voice %s: %w", id, notFound(err))
	}
	refs := make([]engine.Reference, len(v.References))
	for i, r := range v.References {
		refs[i] = engine.Reference{Text: r.Text, Codes: r.Codes}
	}
	return refs, nil
}

// maxClipDuration is the longest clip decoded: what a voice keeps in all
// (clip.MaxTotal samples, 60 s). A longer clip is refused from its header
// (WAV) or after decoding a moment past it (ffmpeg), never decoded whole.
const maxClipDuration = time.Duration(clip.MaxTotal) * time.Second / clip.SampleRate

// Clone makes and saves a cloned voice through package clone, as drama
// encode does with CLIP:TRANSCRIPT arguments, consent stamped now. An
// existing voice is not replaced.
func (s *voiceStore) Clone(ctx context.Context, req httpapi.CloneRequest) (httpapi.VoiceInfo, error) {
	if s.ready != nil {
		if err := s.ready(); err != nil {
			return httpapi.VoiceInfo{}, fmt.Errorf("the encoder needs the variant's codec: %w", err)
		}
	}
	id := req.ID
	if id == "" {
		var err error
		if id, err = clone.IDFromName(req.Name); err != nil {
			return httpapi.VoiceInfo{}, engine.Invalidf("%v", err)
		}
	}
	if err := voices.CheckID(id); err != nil {
		return httpapi.VoiceInfo{}, engine.Invalidf("id: %v", err)
	}
	if err := os.MkdirAll(s.files.Dir(), 0o700); err != nil {
		return httpapi.VoiceInfo{}, err
	}
	source := voices.SourceKind(req.Source)
	if source == "" {
		source = voices.SourceConsented
	}
	clips := make([]clone.Clip, len(req.Clips))
	for i, c := range req.Clips {
		clips[i] = clone.Clip{Name: clipName(i, c), Transcript: c.Transcript, Path: c.Path, Data: c.Data, Filename: c.Filename}
	}
	out, _ := s.files.Path(id) // id is checked above
	opts := clone.Options{ID: id, Name: req.Name, Output: out, Install: s.install, MaxClipDuration: maxClipDuration}
	if s.transcriber != nil {
		opts.Transcriber = s.transcriber
	}
	res, _, err := clone.Clone(ctx, s.enc, clips,
		clone.Consent{Source: source, Who: req.ConsentWho, Statement: req.ConsentStatement},
		opts)
	if err != nil {
		return httpapi.VoiceInfo{}, requestError(err)
	}
	s.files.Lookup(id) // listed here at once, before any notice
	v := res.Voice
	return info(store.Summary{ID: v.ID, Name: v.Name, Source: v.Source, Consent: v.Consent, References: len(v.References), Frames: v.TotalFrames()}), nil
}

// clipName names the i-th clip of a request in messages: "clip 2
// (take2.wav)", or "clip 2" when it came without a file name.
func clipName(i int, c httpapi.CloneClip) string {
	if c.Filename == "" {
		return fmt.Sprintf("clip %d", i+1)
	}
	return fmt.Sprintf("clip %d (%s)", i+1, filepath.Base(c.Filename))
}

// requestError gives a clone's error the engine's kind the API answers
// by: the request's fault is invalid (a 400) with the API's advice, the
// encoder's failure keeps the engine's kind.
func requestError(err error) error {
	var ee *clone.EncodeError
	var xe *clone.ExistsError
	var ie *clone.InputError
	var pe *clone.PiecesError
	var te *clone.TranscribeError
	var engErr *engine.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, clone.ErrNoTranscript) && errors.As(err, &ie):
		return engine.Invalidf("%s: no transcript: send the exact words spoken in the clip as its transcript field (or start drama serve with --transcribe-url, naming a speech recognition server)", ie.Clip)
	case errors.As(err, &te):
		return engine.Invalidf("%v", err)
	case errors.As(err, &ee) && errors.As(err, &engErr):
		return err
	case errors.As(err, &ee):
		return engine.Errorf(engine.KindFailed, "%v", err)
	case errors.As(err, &xe):
		return &existsError{id: xe.ID}
	case errors.As(err, &pe):
		return engine.Invalidf("%v: send each piece as a clip of its own, with its own transcript", err)
	case errors.As(err, &ie):
		return engine.Invalidf("%v", err)
	}
	return err
}

// existsError is a clone of a taken id: answered 409 (httpapi.ErrVoiceExists).
type existsError struct{ id string }

func (e *existsError) Error() string {
	return fmt.Sprintf("voice %q exists: delete it first (DELETE /v1/voices/%s), or give another id", e.id, e.id)
}

// Is makes the error an httpapi.ErrVoiceExists.
func (e *existsError) Is(target error) bool { return target == httpapi.ErrVoiceExists }

// Delete removes a cloned voice's file.
func (s *voiceStore) Delete(ctx context.Context, id string) error {
	return notFound(s.files.Delete(id))
}

// MakeReferences makes references of req's clips through package clone,
// as Clone does, and saves nothing: the inline references of POST /v1/tts.
func (s *voiceStore) MakeReferences(ctx context.Context, req httpapi.CloneRequest) ([]engine.Reference, error) {
	if s.ready != nil {
		if err := s.ready(); err != nil {
			return nil, fmt.Errorf("the encoder needs the variant's codec: %w", err)
		}
	}
	clips := make([]clone.Clip, len(req.Clips))
	for i, c := range req.Clips {
		name := c.Filename
		if name == "" {
			name = clipName(i, c)
		}
		clips[i] = clone.Clip{Name: name, Transcript: c.Transcript, Path: c.Path, Data: c.Data, Filename: c.Filename}
	}
	opts := clone.Options{Name: req.Name, Install: s.install, MaxClipDuration: maxClipDuration}
	source := voices.SourceKind(req.Source)
	if source == "" {
		source = voices.SourceConsented
	}
	refs, _, err := clone.MakeReferences(ctx, s.enc, clips, clone.Consent{Source: source, Who: req.ConsentWho, Statement: req.ConsentStatement}, opts)
	if err != nil {
		return nil, requestError(err)
	}
	out := make([]engine.Reference, len(refs))
	for i, r := range refs {
		out[i] = engine.Reference{Text: r.Text, Codes: r.Codes}
	}
	return out, nil
}

// Edit renames a cloned voice, its file rewritten canonically and
// atomically, mode 0600, all else kept.
func (s *voiceStore) Edit(ctx context.Context, id string, edit httpapi.VoiceEdit) (httpapi.VoiceInfo, error) {
	p, err := s.path(id)
	if err != nil {
		return httpapi.VoiceInfo{}, err
	}
	v, err := s.files.Read(id)
	if errors.Is(err, store.ErrNotFound) {
		return httpapi.VoiceInfo{}, fmt.Errorf("%w: %s", httpapi.ErrVoiceNotFound, id)
	}
	if err != nil {
		return httpapi.VoiceInfo{}, fmt.Errorf("cloned voice %s: %w", id, err)
	}
	if edit.Name != nil {
		v.Name = strings.TrimSpace(*edit.Name)
	}
	data, err := voices.Marshal(v, nil)
	if err != nil {
		return httpapi.VoiceInfo{}, engine.Invalidf("%v", err)
	}
	if err := atomicfile.WriteFile(p, data, 0o600); err != nil {
		return httpapi.VoiceInfo{}, err
	}
	// the index, and the listing every host sharing the store reads, follow the new file
	sum, ok := s.files.Lookup(id)
	if !ok {
		return httpapi.VoiceInfo{}, fmt.Errorf("%w: %s", httpapi.ErrVoiceNotFound, id)
	}
	return info(sum), nil
}
