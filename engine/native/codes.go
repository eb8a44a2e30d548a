package native

import (
	"encoding/json"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"os"
)

// MaxEncodeSeconds is the longest clip the voice encoders take.
const MaxEncodeSeconds = 30

// CodesFile is the JSON a voice encoder writes: the clip's frame count and
// its codes, codebook-major (10 rows of frames values).
type CodesFile struct {
	Frames int     `json:"frames"`
	Codes  [][]int `json:"codes"`
}

// ReadCodes reads and checks a codes file: 10 codebooks of Frames values in
// range.
func ReadCodes(path string) ([][]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("native: codes: %w", err)
	}
	var f CodesFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("native: codes %s: %w", path, err)
	}
	ref := Reference{Text: "-", VQCodes: f.Codes}
	if err := ref.Validate(); err != nil {
		return nil, fmt.Errorf("native: codes %s: %w", path, err)
	}
	if len(f.Codes[0]) != f.Frames {
		return nil, fmt.Errorf("native: codes %s: frames: want %d, got %d", path, len(f.Codes[0]), f.Frames)
	}
	return f.Codes, nil
}

// WriteCodes writes a codes file: to a temporary file beside path, synced,
// then renamed.
func WriteCodes(path string, codes [][]int) error {
	frames := 0
	if len(codes) > 0 {
		frames = len(codes[0])
	}
	b, err := json.Marshal(CodesFile{Frames: frames, Codes: codes})
	if err != nil {
		return fmt.Errorf("native: codes: %w", err)
	}
	return writeFile(path, append(b, '\n'), 0o644)
}

// writeFile writes data to path atomically (see atomicfile.Write).
func writeFile(path string, data []byte, perm os.FileMode) error {
	if err := atomicfile.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("native: %w", err)
	}
	return nil
}
