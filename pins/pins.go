package pins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/internal/model"
	"github.com/drama-tts/drama/internal/safetext"
)

// Format is the value of the format field of every pins file.
const Format = "drama-pins/1"

// LockFileName is the name of the lock file: the complete pins written into
// a variant's directory after a verified fetch.
const LockFileName = "pins.lock.json"

// StateDirName is the folder inside a variant directory (and the root) that
// holds drama's own state. Verify never reports it as an extra file.
const StateDirName = model.StateDirName

// File is one pinned file.
type File struct {
	Path    string `json:"path"`               // slash-separated, relative to the repository root
	Size    int64  `json:"size"`               // bytes
	SHA256  string `json:"sha256,omitempty"`   // lower-case hex; for LFS files the Hub's LFS oid
	GitSHA1 string `json:"git_sha1,omitempty"` // optional git blob sha1 (small files)
	LFS     bool   `json:"lfs,omitempty"`      // stored in LFS on the Hub
}

// Pins is one variant's pinned install.
type Pins struct {
	Format     string   `json:"format"`
	Variant    string   `json:"variant"`
	Repo       string   `json:"repo"`      // e.g. fishaudio/drama-3
	RepoType   string   `json:"repo_type"` // "model"
	Revision   string   `json:"revision"`  // a full 40-hex commit; empty only for pins made from local files
	License    string   `json:"license"`
	LicenseURL string   `json:"license_url,omitempty"`
	Engine     string   `json:"engine"` // "cuda" or "metal"
	ServeFlags []string `json:"serve_flags"`
	MemoryGiB  float64  `json:"memory_gib"` // resident device memory estimate when served
	// ExpectedFiles is the number of files the repository holds at the
	// revision, when known (0 = unknown).
	ExpectedFiles int `json:"expected_files,omitempty"`
	// ExpectedBytes is the total size of the files matched by
	// ExpectedBytesOf, when known (0 = unknown).
	ExpectedBytes int64 `json:"expected_bytes,omitempty"`
	// ExpectedBytesOf are path.Match patterns naming the files that
	// ExpectedBytes totals.
	ExpectedBytesOf []string `json:"expected_bytes_of,omitempty"`
	Files           []File   `json:"files"`
}

var (
	// ErrIncomplete is wrapped when pins without digests are asked to
	// verify or fetch: they must be completed first.
	ErrIncomplete = errors.New("incomplete pins")
	// ErrInvalid is wrapped by every validation error of a pins file.
	ErrInvalid = errors.New("invalid pins")
)

var (
	hex40 = regexp.MustCompile(`^[0-9a-f]{40}$`)
	hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// IsCommit reports whether rev is a full commit id: 40 lower-case hex
// digits, not a branch, a tag or an abbreviation.
func IsCommit(rev string) bool { return hex40.MatchString(rev) }

// Complete reports whether the pins list files and every file has a sha256.
func (p *Pins) Complete() bool {
	if len(p.Files) == 0 {
		return false
	}
	for _, f := range p.Files {
		if f.SHA256 == "" {
			return false
		}
	}
	return true
}

// CompletedBy returns p with the digests of lock, a complete lock file an
// earlier fetch of the same repository and revision wrote: all of lock
// when p lists no file, else p's files, in p's order, each taken from lock.
// It reports false, and p is to be completed from the Hub, when lock is of
// another repository or revision, is not complete, lacks one of p's files,
// or disagrees with a size or sha256 p gives.
func (p *Pins) CompletedBy(lock *Pins) (*Pins, bool) {
	if lock == nil || !lock.Complete() || lock.Repo != p.Repo || lock.Revision != p.Revision || p.Revision == "" {
		return nil, false
	}
	if len(p.Files) == 0 {
		return lock, true
	}
	files := make([]File, 0, len(p.Files))
	for _, f := range p.Files {
		l, ok := lock.Lookup(f.Path)
		if !ok || (f.Size != 0 && f.Size != l.Size) || (f.SHA256 != "" && f.SHA256 != l.SHA256) {
			return nil, false
		}
		files = append(files, l)
	}
	c := *p
	c.Files = files
	return &c, true
}

// Lookup returns the pinned file with the given slash-separated path.
func (p *Pins) Lookup(name string) (File, bool) {
	for _, f := range p.Files {
		if f.Path == name {
			return f, true
		}
	}
	return File{}, false
}

// TotalBytes is the sum of the pinned files' sizes.
func (p *Pins) TotalBytes() int64 {
	var n int64
	for _, f := range p.Files {
		n += f.Size
	}
	return n
}

// CheckExpected compares a complete file list with the expected totals and
// returns an error wrapping ErrInvalid when they disagree.
func (p *Pins) CheckExpected() error {
	if p.ExpectedFiles > 0 && len(p.Files) != p.ExpectedFiles {
		return fmt.Errorf("%w: variant %s: want %d files, got %d", ErrInvalid, p.Variant, p.ExpectedFiles, len(p.Files))
	}
	if p.ExpectedBytes == 0 {
		return nil
	}
	var n int64
	for _, f := range p.Files {
		if matchAny(p.ExpectedBytesOf, f.Path) {
			n += f.Size
		}
	}
	if n != p.ExpectedBytes {
		return fmt.Errorf("%w: variant %s: files matching %s: want %d bytes, got %d",
			ErrInvalid, p.Variant, strings.Join(p.ExpectedBytesOf, ", "), p.ExpectedBytes, n)
	}
	return nil
}

func matchAny(patterns []string, name string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, path.Base(name)); ok {
			return true
		}
	}
	return false
}

// Validate checks the fields and the file list, and sorts the files by path.
func (p *Pins) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case p.Format != Format:
		return bad("format: want %q, got %q", Format, p.Format)
	case p.Variant == "":
		return bad("variant is empty")
	case p.Revision != "" && !IsCommit(p.Revision):
		return bad("revision %q is not a full 40-hex commit: pin a commit, not a branch or tag", p.Revision)
	case p.Repo != "" && strings.Count(p.Repo, "/") != 1:
		return bad("repo %q: want owner/name", p.Repo)
	case p.RepoType != "" && p.RepoType != "model" && p.RepoType != "dataset":
		return bad("repo_type %q: want model or dataset", p.RepoType)
	}
	sort.Slice(p.Files, func(i, j int) bool { return p.Files[i].Path < p.Files[j].Path })
	for i, f := range p.Files {
		if err := validateFile(f); err != nil {
			return bad("files[%d]: %v", i, err)
		}
		if i > 0 && p.Files[i-1].Path == f.Path {
			return bad("files: %q listed twice", f.Path)
		}
	}
	return nil
}

func validateFile(f File) error {
	if err := CheckPath(f.Path); err != nil {
		return err
	}
	switch {
	case f.Size < 0:
		return fmt.Errorf("%s: size %d is negative", f.Path, f.Size)
	case f.SHA256 != "" && !hex64.MatchString(f.SHA256):
		return fmt.Errorf("%s: sha256 %q: want 64 lower-case hex digits", f.Path, f.SHA256)
	case f.GitSHA1 != "" && !hex40.MatchString(f.GitSHA1):
		return fmt.Errorf("%s: git_sha1 %q: want 40 lower-case hex digits", f.Path, f.GitSHA1)
	}
	return nil
}

// ValidPath reports whether name is a clean, relative, slash-separated path
// that stays inside its directory, does not enter drama's state folder and
// holds no control character: CheckPath's rule.
func ValidPath(name string) bool { return CheckPath(name) == nil }

// CheckPath refuses a file name from outside (a pins or lock file, a Hub's
// listing, a patch series) that drama may not turn into a path: one that is
// not clean, relative and slash-separated, that leaves its directory or
// enters drama's state folder, or that holds a control character (C0, TAB
// and line feed included, DEL or C1), which could rewrite the terminal
// it is shown on or forge a line of drama's output. The error names the
// name, quoted with its control characters escaped.
func CheckPath(name string) error {
	if i := strings.IndexFunc(name, safetext.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Errorf("path %q holds the control character %s at byte %d: a file name may not hold one (a listing or pins file that names it is not to be trusted)",
			name, safetext.Escape(string(r)), i)
	}
	first, _, _ := strings.Cut(name, "/")
	if name == "" || name == "." || path.Clean(name) != name || path.IsAbs(name) || strings.Contains(name, `\`) ||
		first == ".." || first == StateDirName || name == LockFileName {
		return fmt.Errorf("path %q: want a clean relative slash-separated path", name)
	}
	return nil
}

// Parse decodes and validates a pins file. name is used in errors. Unknown
// fields are refused; a syntax error names its byte offset.
func Parse(data []byte, name string) (*Pins, error) {
	var p Pins
	if err := decodeStrict(data, name, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// decodeStrict decodes the JSON document data, named name in errors, into
// v and validates it: unknown fields and data after the document are
// refused, and a syntax error names its byte offset.
func decodeStrict(data []byte, name string, v interface{ Validate() error }) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("pins: %s: %w", name, describeJSONError(err, data, dec.InputOffset()))
	}
	if dec.More() {
		return fmt.Errorf("pins: %s: %w: data after the JSON document at offset %d", name, ErrInvalid, dec.InputOffset())
	}
	if err := v.Validate(); err != nil {
		return fmt.Errorf("pins: %s: %w", name, err)
	}
	return nil
}

func describeJSONError(err error, data []byte, offset int64) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		at := max(syn.Offset-1, 0) // the offending byte
		return fmt.Errorf("%w: JSON syntax error at byte offset %d (%s): %v", ErrInvalid, at, lineCol(data, at), err)
	case errors.As(err, &typ):
		return fmt.Errorf("%w: field %q at offset %d (%s): want %s, got JSON %s", ErrInvalid, typ.Field, typ.Offset, lineCol(data, typ.Offset), typ.Type, typ.Value)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: empty file", ErrInvalid)
	default:
		return fmt.Errorf("%w: at offset %d: %v", ErrInvalid, offset, err)
	}
}

// ReadFile reads and parses a pins file.
func ReadFile(name string) (*Pins, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("pins: %w", err)
	}
	return Parse(data, name)
}

// Marshal returns the canonical JSON form of p: two-space indent, files
// sorted by path, a final newline.
func (p *Pins) Marshal() ([]byte, error) {
	q := *p
	q.Files = append([]File(nil), p.Files...)
	sort.Slice(q.Files, func(i, j int) bool { return q.Files[i].Path < q.Files[j].Path })
	if q.Files == nil {
		q.Files = []File{}
	}
	if q.ServeFlags == nil {
		q.ServeFlags = []string{}
	}
	data, err := json.MarshalIndent(&q, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// WriteFile writes p to name atomically: a temporary file beside it,
// synced, then renamed.
func (p *Pins) WriteFile(name string) error {
	data, err := p.Marshal()
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	return atomicfile.WriteFile(name, data, 0o644)
}

// lineCol names the 1-based line and column of a byte offset.
func lineCol(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - int64(bytes.LastIndexByte(data[:off], '\n')) // 1-based
	return fmt.Sprintf("line %d, column %d", line, col)
}
