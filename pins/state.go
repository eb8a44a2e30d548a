package pins

import (
	"encoding/json"
	"github.com/drama-tts/drama/internal/atomicfile"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// StateFileName is the verified-state record inside a directory's
// StateDirName folder.
const StateFileName = "verified.json"

// fileIdentity is what must be unchanged for a recorded sha256 to still
// describe a file.
type fileIdentity struct {
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	Inode   uint64 `json:"inode"`
	Device  uint64 `json:"device"`
}

type stateEntry struct {
	fileIdentity
	SHA256 string `json:"sha256"`
}

// verifiedState maps a pinned path to what its last full check found.
type verifiedState struct {
	mu      sync.Mutex
	Entries map[string]stateEntry `json:"files"`
}

func identityOf(fi os.FileInfo) fileIdentity {
	id := fileIdentity{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.Inode, id.Device = uint64(st.Ino), uint64(st.Dev)
	}
	return id
}

// loadState reads the record; a missing or unreadable record is empty, since
// it only ever saves work.
func loadState(name string) *verifiedState {
	s := &verifiedState{Entries: map[string]stateEntry{}}
	data, err := os.ReadFile(name)
	if err != nil {
		return s
	}
	if json.Unmarshal(data, s) != nil || s.Entries == nil {
		s.Entries = map[string]stateEntry{}
	}
	return s
}

// lookup returns the recorded sha256 of path if its identity is unchanged.
func (s *verifiedState) lookup(path string, id fileIdentity) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.Entries[path]
	if !ok || e.fileIdentity != id {
		return "", false
	}
	return e.SHA256, true
}

func (s *verifiedState) set(path string, id fileIdentity, sum string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Entries[path] = stateEntry{fileIdentity: id, SHA256: sum}
}

func (s *verifiedState) drop(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.Entries, path)
}

func (s *verifiedState) save(name string) error {
	s.mu.Lock()
	data, err := json.MarshalIndent(s, "", "  ")
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(name, append(data, '\n'), 0o644)
}
