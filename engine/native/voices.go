package native

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/drama-tts/drama/internal/model"

	"github.com/drama-tts/drama/engine"
)

// Voices lists the voices the server read at start from its --voices
// directory: drama3-voice/1 files on CUDA, the drama3-http-voice/1 catalog
// on Metal. A file in another format is skipped, as the server skips it.
func (e *Engine) Voices(ctx context.Context) ([]engine.Voice, error) {
	if _, _, err := e.current(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]engine.Voice(nil), e.voices...), nil
}

// readVoices lists the voice files of dir in format, sorted by id.
func readVoices(dir, format string) ([]engine.Voice, error) {
	if dir == "" {
		return nil, nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, engine.Errorf(engine.KindFailed, "voices %s: %w", dir, err)
	}
	var out []engine.Voice
	for _, p := range paths {
		if v, ok := readVoice(p, format); ok {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// voiceFile holds the fields of both voice formats that a listing shows.
type voiceFile struct {
	Format string `json:"format"`
	ID     string `json:"id"`
	Name   string `json:"name"`
	Source struct {
		Kind string `json:"kind"`
	} `json:"source"`
	References []struct {
		Frames int `json:"frames"`
	} `json:"references"`
}

func readVoice(path, format string) (engine.Voice, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return engine.Voice{}, false
	}
	var f voiceFile
	if json.Unmarshal(b, &f) != nil || f.Format != format || f.ID == "" {
		return engine.Voice{}, false
	}
	v := engine.Voice{ID: f.ID, Name: f.Name, Source: f.Source.Kind, References: len(f.References)}
	for _, r := range f.References {
		v.Frames += r.Frames
	}
	return v, true
}

// PublishVoice writes a drama3-http-voice/1 file into the Metal catalog
// directory as <id>.json (temporary file, sync, rename). The Metal server
// reads its catalog only at start: call Start again to serve the voice.
func PublishVoice(catalog, id string, data []byte) error {
	if !model.ValidID(id) {
		return fmt.Errorf("native: publish voice: id %q: want %s", id, model.IDPattern)
	}
	var f voiceFile
	if err := json.Unmarshal(data, &f); err != nil || f.Format != Metal.VoiceFormat || f.ID != id {
		return fmt.Errorf("native: publish voice %q: want a %s file with that id", id, Metal.VoiceFormat)
	}
	return writeFile(filepath.Join(catalog, id+".json"), data, 0o600)
}
