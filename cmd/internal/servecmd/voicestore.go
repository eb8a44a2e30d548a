package servecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/drama-tts/drama/cmd/internal/encodecmd"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/supervise"
	"github.com/drama-tts/drama/voices"
)

// voiceStore keeps the cloned voices of a root: one file per voice,
// <dir>/<id>.json, mode 0600.
type voiceStore struct {
	dir     string
	sup     *supervise.Supervisor
	install engine.Install
}

func newVoiceStore(dir string, sup *supervise.Supervisor, install engine.Install) *voiceStore {
	return &voiceStore{dir: dir, sup: sup, install: install}
}

var _ httpapi.VoiceStore = (*voiceStore)(nil)

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
		out = append(out, info(v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func info(v *voices.Voice) httpapi.VoiceInfo {
	frames := v.TotalFrames()
	return httpapi.VoiceInfo{ID: v.ID, Name: v.Name, Origin: "clone", Source: string(v.Source),
		References: len(v.References), Frames: frames, Seconds: voices.Seconds(frames)}
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

// Clone makes and saves a cloned voice through drama encode's pipeline, so
// a voice cloned through the API and one cloned on the command line are
// made the same way.
func (s *voiceStore) Clone(ctx context.Context, req httpapi.CloneRequest) (httpapi.VoiceInfo, error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return httpapi.VoiceInfo{}, err
	}
	v, err := encodecmd.Clone(ctx, s.sup.Engine(), s.install, s.dir, req)
	if err != nil {
		return httpapi.VoiceInfo{}, err
	}
	return info(v), nil
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
