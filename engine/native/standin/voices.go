package standin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/internal/model"
)

// Voice formats read by the two builds.
const (
	FormatVoice     = "drama3-voice/1"      // CUDA --voices files
	FormatHTTPVoice = "drama3-http-voice/1" // Metal catalog files
)

// Voice is a voice the stand-in serves.
type Voice struct {
	ID         string
	Name       string
	References int
	Key        string // the sha256 of the file, part of the audio seed
}

// LoadVoices reads every *.json file of dir as a voice in the build's format
// (drama3-http-voice/1 for Metal, drama3-voice/1 otherwise). It checks the
// fields the stand-in needs, not every rule of the format.
func LoadVoices(dir string, metal bool) (map[string]Voice, error) {
	want := FormatVoice
	if metal {
		want = FormatHTTPVoice
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("standin: voices %s: %w", dir, err)
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("standin: voices: %w", err)
	}
	out := map[string]Voice{}
	for _, p := range paths {
		v, err := loadVoice(p, want)
		if err != nil {
			return nil, err
		}
		if _, dup := out[v.ID]; dup {
			return nil, fmt.Errorf("standin: voice %s: id %q used twice", p, v.ID)
		}
		out[v.ID] = v
	}
	return out, nil
}

func loadVoice(path, format string) (Voice, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Voice{}, fmt.Errorf("standin: voice: %w", err)
	}
	var f struct {
		Format     string            `json:"format"`
		ID         string            `json:"id"`
		Name       string            `json:"name"`
		References []json.RawMessage `json:"references"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return Voice{}, fmt.Errorf("standin: voice %s: %w", path, err)
	}
	switch {
	case f.Format != format:
		return Voice{}, fmt.Errorf("standin: voice %s: format: want %q, got %q", path, format, f.Format)
	case !model.ValidID(f.ID):
		return Voice{}, fmt.Errorf("standin: voice %s: id %q: want %s", path, f.ID, model.IDPattern)
	case len(f.References) == 0:
		return Voice{}, fmt.Errorf("standin: voice %s: no references", path)
	}
	sum := sha256.Sum256(b)
	return Voice{ID: f.ID, Name: f.Name, References: len(f.References), Key: hex.EncodeToString(sum[:])}, nil
}
