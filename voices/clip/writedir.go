package clip

import (
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrManifestExists means a directory already holds a manifest, perhaps
// with transcripts typed into it; WriteDir keeps it unless told to replace.
var ErrManifestExists = errors.New("clip: the directory already holds a manifest")

// WriteDir writes the references of res into dir as mono 16-bit 44.1 kHz
// WAV files (RefFile(i), mode 0600) and then the manifest. dir is made
// (mode 0700) when missing. An existing manifest is refused with
// ErrManifestExists unless replace is set; when replaced, transcripts
// already typed in for a reference with the same source and span are kept.
// Every file is written to a temporary name, synced and renamed.
func WriteDir(dir string, res *Result, replace bool) (*Manifest, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("clip: %w", err)
	}
	mpath := filepath.Join(dir, ManifestName)
	old, err := ReadManifest(dir)
	switch {
	case err == nil && !replace, err != nil && !errors.Is(err, fs.ErrNotExist) && !replace:
		return nil, fmt.Errorf("%w: %s", ErrManifestExists, mpath)
	}
	m := NewManifest(res)
	if old != nil {
		keepTexts(m, old)
	}
	for i, r := range res.References {
		if err := atomicfile.WriteFile(filepath.Join(dir, RefFile(i)), EncodeWAV(r.Samples, SampleRate), 0o600); err != nil {
			return nil, fmt.Errorf("clip: %w", err)
		}
	}
	b, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(mpath, b, 0o600); err != nil {
		return nil, fmt.Errorf("clip: %w", err)
	}
	return m, nil
}

func keepTexts(m, old *Manifest) {
	type key struct {
		source     string
		start, end float64
	}
	texts := map[key]string{}
	for _, r := range old.References {
		texts[key{r.Source, r.Start, r.End}] = r.Text
	}
	for i, r := range m.References {
		m.References[i].Text = texts[key{r.Source, r.Start, r.End}]
	}
}
