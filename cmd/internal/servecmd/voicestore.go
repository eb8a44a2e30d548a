package servecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/clone"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/pins/atomicfile"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
	"github.com/drama-tts/drama/voices/transcribe"
)

// voiceStore keeps the cloned voices of a root: one file per voice,
// <dir>/<id>.json, mode 0600.
type voiceStore struct {
	dir     string
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
// before each clone whether the install can encode.
func newVoiceStore(dir string, enc clone.Encoder, install engine.Install, ready func() error) *voiceStore {
	return &voiceStore{dir: dir, enc: enc, install: install, ready: ready}
}

var (
	_ httpapi.VoiceStore     = (*voiceStore)(nil)
	_ httpapi.ReferenceMaker = (*voiceStore)(nil)
	_ httpapi.VoiceEditor    = (*voiceStore)(nil)
)

// List reads every voice file of the directory; files that do not parse
// are skipped (drama voice check names their problems).
func (s *voiceStore) List(ctx context.Context) ([]httpapi.VoiceInfo, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := []httpapi.VoiceInfo{}
	for _, name := range names {
		v, err := voices.ReadFile(name, nil)
		if err != nil {
			continue
		}
		vi := info(v)
		if fi, err := os.Stat(name); err == nil {
			vi.Updated = fi.ModTime()
		}
		out = append(out, vi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func info(v *voices.Voice) httpapi.VoiceInfo {
	frames := v.TotalFrames()
	vi := httpapi.VoiceInfo{ID: v.ID, Name: v.Name, Origin: "clone", Source: string(v.Source),
		References: len(v.References), Frames: frames, Seconds: voices.Seconds(frames),
		Description: v.Note, Created: v.Created}
	if c := v.Consent; c != nil {
		vi.Consent = &httpapi.VoiceConsent{Who: c.Who, When: c.When, Statement: c.Statement}
	}
	return vi
}

func (s *voiceStore) path(id string) (string, error) {
	if err := voices.CheckID(id); err != nil {
		return "", fmt.Errorf("%w: %v", httpapi.ErrVoiceNotFound, err)
	}
	return filepath.Join(s.dir, id+".json"), nil
}

// References returns a cloned voice's references.
func (s *voiceStore) References(ctx context.Context, id string) ([]engine.Reference, error) {
	p, err := s.path(id)
	if err != nil {
		return nil, err
	}
	v, err := voices.ReadFile(p, nil)
	if err != nil {
		return nil, fmt.Errorf("cloned voice %s: %w", id, err)
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
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
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
	opts := clone.Options{ID: id, Name: req.Name, Output: filepath.Join(s.dir, id+".json"), Install: s.install, MaxClipDuration: maxClipDuration}
	if s.transcriber != nil {
		opts.Transcriber = s.transcriber
	}
	res, _, err := clone.Clone(ctx, s.enc, clips,
		clone.Consent{Source: source, Who: req.ConsentWho, Statement: req.ConsentStatement},
		opts)
	if err != nil {
		return httpapi.VoiceInfo{}, requestError(err)
	}
	return info(res.Voice), nil
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
		return engine.Invalidf("voice %q exists: delete it first (DELETE /v1/voices/%s), or give another id", xe.ID, xe.ID)
	case errors.As(err, &pe):
		return engine.Invalidf("%v: send each piece as a clip of its own, with its own transcript", err)
	case errors.As(err, &ie):
		return engine.Invalidf("%v", err)
	}
	return err
}

// Delete removes a cloned voice's file.
func (s *voiceStore) Delete(ctx context.Context, id string) error {
	p, err := s.path(id)
	if err != nil {
		return err
	}
	err = os.Remove(p)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s", httpapi.ErrVoiceNotFound, strings.TrimSuffix(filepath.Base(p), ".json"))
	}
	return err
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
	v, err := voices.ReadFile(p, nil)
	if errors.Is(err, os.ErrNotExist) {
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
	return info(v), nil
}
