package build

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/pins"
)

// RecordFormat is the format field of every engine.json.
const RecordFormat = "drama-engine/1"

// RecordName and SumsName are the record files beside the installed
// binaries. drama serve checks the server binary against SumsName.
const (
	RecordName = "engine.json"
	SumsName   = "engine.sha256"
	// LockName is the sources pins with every pinned file's digest, as the
	// install found them at the pinned commit. Later installs of the same
	// commits are held to them (see Complete).
	LockName = "sources.lock.json"
)

// ErrMismatch is wrapped by every error that is a verification mismatch:
// a HEAD, a pinned file, a patch or a binary that is not the pinned one.
var ErrMismatch = errors.New("verification mismatch")

// ErrBadRecord is wrapped by every error of ReadRecord about a record that
// is there but cannot be used (another install writes a good one); it
// wraps ErrMismatch.
var ErrBadRecord = fmt.Errorf("bad engine record: %w", ErrMismatch)

// Record is what an install built, from what, and each binary's sha256.
type Record struct {
	Format      string         `json:"format"`
	Variant     string         `json:"variant"`
	Engine      string         `json:"engine"`
	InstalledAt string         `json:"installed_at"`
	Recipe      RepoRecord     `json:"recipe"`
	Upstream    RepoRecord     `json:"upstream"`
	PatchedHead string         `json:"patched_head"`
	Patches     []PatchRecord  `json:"patches"`
	Head        string         `json:"head"` // the engine checkout's HEAD that was built
	Files       []FileRecord   `json:"files"`
	Toolchain   Tools          `json:"toolchain"`
	Binaries    []BinaryRecord `json:"binaries"`
	Log         string         `json:"log"`
}

// RepoRecord is one checkout that was built from.
type RepoRecord struct {
	Name        string `json:"name"`
	URL         string `json:"url"`
	FetchedFrom string `json:"fetched_from,omitempty"` // the mirror or URL it came from, when fetched in that run
	Commit      string `json:"commit"`
}

// PatchRecord is an operator patch applied after upstream's series.
type PatchRecord struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// FileRecord is a pinned file of the recipe; Completed says its digest came
// from the checkout at the pinned commit because the pins gave none.
type FileRecord struct {
	Path      string `json:"path"`
	SHA256    string `json:"sha256"`
	Completed bool   `json:"completed,omitempty"`
}

// BinaryRecord is an installed binary.
type BinaryRecord struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Dir is where a variant's engine is installed under root.
func Dir(root, variant string) string { return filepath.Join(root, "engine", variant) }

// WorkDir is where a variant's engine is built under root.
func WorkDir(root, variant string) string { return filepath.Join(root, "engine", "build", variant) }

// ReadRecord reads dir's engine.json. A missing record wraps
// os.ErrNotExist.
func ReadRecord(dir string) (*Record, error) {
	p := filepath.Join(dir, RecordName)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("engine build: engine record: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("engine build: %s: %w: %v", p, ErrBadRecord, err)
	}
	if r.Format != RecordFormat {
		return nil, fmt.Errorf("engine build: %s: %w: format: want %q, got %q", p, ErrBadRecord, RecordFormat, r.Format)
	}
	if len(r.Binaries) == 0 {
		return nil, fmt.Errorf("engine build: %s: %w: no binaries recorded", p, ErrBadRecord)
	}
	for i, b := range r.Binaries {
		if b.Name == "" || filepath.Base(b.Name) != b.Name || b.Name == ".." || !hex64.MatchString(b.SHA256) {
			return nil, fmt.Errorf("engine build: %s: %w: binaries[%d]: want a plain file name and a 64-hex sha256, got %q %q",
				p, ErrBadRecord, i, b.Name, b.SHA256)
		}
	}
	for i, pr := range r.Patches {
		if !hex64.MatchString(pr.SHA256) {
			return nil, fmt.Errorf("engine build: %s: %w: patches[%d].sha256: want 64 hex digits, got %q", p, ErrBadRecord, i, pr.SHA256)
		}
	}
	return &r, nil
}

// writeRecord writes engine.json, then engine.sha256, each atomically.
func writeRecord(dir string, r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, RecordName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("engine build: engine record: %w", err)
	}
	var sums strings.Builder
	for _, b := range r.Binaries {
		fmt.Fprintf(&sums, "%s  %s\n", b.SHA256, b.Name)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, SumsName), []byte(sums.String()), 0o644); err != nil {
		return fmt.Errorf("engine build: engine record: %w", err)
	}
	return nil
}

// State is a binary's state against the record.
type State string

// The states of a binary.
const (
	StateOK      State = "ok"
	StateChanged State = "changed"
	StateMissing State = "missing"
)

// BinaryState is one recorded binary checked on disk.
type BinaryState struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	State  State  `json:"state"`
	Want   string `json:"want"`
	Got    string `json:"got,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Check hashes every binary the record names and compares it with the
// record, and the record's engine.sha256 with its engine.json.
func Check(dir string, r *Record) ([]BinaryState, error) {
	sums, err := readSums(filepath.Join(dir, SumsName))
	if err != nil {
		return nil, err
	}
	var out []BinaryState
	for _, b := range r.Binaries {
		s := BinaryState{Name: b.Name, Path: filepath.Join(dir, b.Name), Want: b.SHA256, State: StateOK}
		got, err := fileSHA256(s.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			s.State, s.Detail = StateMissing, "no such file"
		case err != nil:
			return nil, fmt.Errorf("engine build: %w", err)
		case got != b.SHA256:
			s.State, s.Got, s.Detail = StateChanged, got, "sha256: want "+b.SHA256+", got "+got
		default:
			s.Got = got
		}
		if sum, ok := sums[b.Name]; !ok || sum != b.SHA256 {
			if s.State == StateOK {
				s.State = StateChanged
			}
			s.Detail = strings.TrimPrefix(s.Detail+"; ", "; ") + SumsName + " disagrees with " + RecordName
		}
		out = append(out, s)
	}
	return out, nil
}

func readSums(p string) (map[string]string, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine build: %w", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			m[strings.TrimPrefix(f[1], "*")] = strings.ToLower(f[0])
		}
	}
	return m, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Complete fills the empty digests of s from the lock beside an earlier
// install in dir, when that lock pins the same commits and patched HEAD. It
// returns the lock's path when it was used, "" when there is none or it is
// for other commits. A lock that cannot be read is an error.
func Complete(s *pins.Sources, dir string) (string, error) {
	p := filepath.Join(dir, LockName)
	lock, err := pins.ReadSourcesFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("engine build: %w: remove it to take the digests from the checkout again", err)
	}
	if lock.Recipe.Commit != s.Recipe.Commit || lock.Upstream.Commit != s.Upstream.Commit || lock.PatchedHead != s.PatchedHead {
		return "", nil
	}
	fill := func(files []pins.SourceFile, from []pins.SourceFile) {
		for i := range files {
			for _, l := range from {
				if files[i].SHA256 == "" && l.Path == files[i].Path {
					files[i].SHA256 = l.SHA256
				}
			}
		}
	}
	fill(s.Recipe.Files, lock.Recipe.Files)
	fill(s.Upstream.Files, lock.Upstream.Files)
	return p, nil
}

// writeLock writes the sources pins with the digests the install found.
func writeLock(dir string, s *pins.Sources, files []FileRecord) error {
	l := *s
	l.Recipe.Files = nil
	for _, f := range files {
		l.Recipe.Files = append(l.Recipe.Files, pins.SourceFile{Path: f.Path, SHA256: f.SHA256})
	}
	data, err := l.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, LockName), data, 0o644); err != nil {
		return fmt.Errorf("engine build: %w", err)
	}
	return nil
}
