package build

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"os"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/internal/filehash"
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
// record, and the record's engine.sha256 with its engine.json. An
// engine.sha256 that is not in sha256sum's format disagrees with every
// binary.
func Check(dir string, r *Record) ([]BinaryState, error) {
	sums, err := filehash.ReadSums(filepath.Join(dir, SumsName))
	var bad error
	switch {
	case errors.Is(err, os.ErrNotExist):
	case errors.Is(err, filehash.ErrSumsFormat):
		bad = err
	case err != nil:
		return nil, fmt.Errorf("engine build: %w", err)
	}
	var out []BinaryState
	for _, b := range r.Binaries {
		s := BinaryState{Name: b.Name, Path: filepath.Join(dir, b.Name), Want: b.SHA256, State: StateOK}
		got, _, err := filehash.SHA256(context.Background(), s.Path, nil)
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
		if sum, ok := sumFor(sums, b.Name); bad != nil || !ok || sum != b.SHA256 {
			if s.State == StateOK {
				s.State = StateChanged
			}
			why := SumsName + " disagrees with " + RecordName
			if bad != nil {
				why = bad.Error()
			}
			s.Detail = strings.TrimPrefix(s.Detail+"; ", "; ") + why
		}
		out = append(out, s)
	}
	return out, nil
}

// sumFor returns the digest of the line of sums that names the file name.
func sumFor(sums []filehash.Sum, name string) (string, bool) {
	for _, s := range sums {
		if s.Name == name {
			return s.SHA256, true
		}
	}
	return "", false
}

// RecordError is an engine binary's sha256 that its record does not give:
// the record is missing where Install leaves one, not in sha256sum's
// format, or names no such binary. It wraps ErrBadRecord, and
// os.ErrNotExist for a missing record.
type RecordError struct {
	Path    string // the engine.sha256 read
	Binary  string // the engine binary it was read for
	Variant string // the variant Install put the binary in; "" for the record beside the root's engine
	Err     error  // why; its message names Path
}

// Error says what is wrong with the record, naming it.
func (e *RecordError) Error() string { return "engine build: " + e.Err.Error() }

// Unwrap returns the cause and ErrBadRecord.
func (e *RecordError) Unwrap() []error { return []error{e.Err, ErrBadRecord} }

// RootSums is the record of an engine binary drama did not install: the
// one at <root>/engine/engine.sha256 that `sha256sum BINARY >` writes.
func RootSums(root string) string { return filepath.Join(root, "engine", SumsName) }

// PinnedSHA256 returns the sha256 (lower-case hex) that the engine binary
// bin is held to. A binary Install put in Dir(root, variant) is held to the
// engine.sha256 beside it, which must be there and name the binary's file
// (when not, the install did not finish). Any other binary, and bin "", is
// held to RootSums(root), its first line: "" and no error when there is
// none, which means no check. A record that does not give the digest is a
// *RecordError.
func PinnedSHA256(root, bin string) (string, error) {
	dir := filepath.Dir(bin)
	if bin != "" && filepath.Clean(filepath.Dir(dir)) == filepath.Clean(filepath.Join(root, "engine")) {
		p, variant, name := filepath.Join(dir, SumsName), filepath.Base(dir), filepath.Base(bin)
		sums, err := filehash.ReadSums(p)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, filehash.ErrSumsFormat) {
			return "", &RecordError{Path: p, Binary: bin, Variant: variant, Err: err}
		}
		if err != nil {
			return "", fmt.Errorf("engine build: %w", err)
		}
		sum, ok := sumFor(sums, name)
		if !ok {
			return "", &RecordError{Path: p, Binary: bin, Variant: variant, Err: fmt.Errorf("%s: no sha256 for %s", p, name)}
		}
		return sum, nil
	}
	p := RootSums(root)
	sums, err := filehash.ReadSums(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case errors.Is(err, filehash.ErrSumsFormat):
		return "", &RecordError{Path: p, Binary: bin, Err: err}
	case err != nil:
		return "", fmt.Errorf("engine build: %w", err)
	case len(sums) == 0:
		return "", &RecordError{Path: p, Binary: bin, Err: fmt.Errorf("%s: no sha256 in it", p)}
	}
	return sums[0].SHA256, nil
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
