package hub

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/pins"
)

// SourceFileName is the file in a variant's .drama directory that records
// where drama fetch got the variant from, so advice to fetch it again can
// name the same endpoint.
const SourceFileName = "source.json"

type source struct {
	Endpoint string `json:"endpoint"`
}

// WriteSource records the endpoint a verified fetch of the variant in dir
// came from: a temporary file beside the record, synced, renamed.
func WriteSource(dir, endpoint string) error {
	state := filepath.Join(dir, pins.StateDirName)
	if err := os.MkdirAll(state, 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(source{Endpoint: endpoint})
	return atomicfile.WriteFile(filepath.Join(state, SourceFileName), append(b, '\n'), 0o600)
}

// Source returns the endpoint recorded for the variant in dir, or "" when
// none is.
func Source(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, pins.StateDirName, SourceFileName))
	if err != nil {
		return ""
	}
	var s source
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s.Endpoint
}
