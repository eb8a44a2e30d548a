package pins

import (
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// SourcesFormat is the value of the format field of every engine sources
// pins file.
const SourcesFormat = "drama-engine-sources/1"

//go:embed builtin/sources/*.json
var sourcesFS embed.FS

// Sources pins the native engine's sources for one variant: the recipe
// repository (drama-tensorfold) and the engine repository (TensorFold), each
// at an exact commit, the engine's HEAD after upstream's patch series, the
// recipe's pinned files, the toolchain, and the build's commands and
// binaries. They sit beside the variant's weight pins (a file of their own,
// so that pins readers that refuse unknown fields keep working).
type Sources struct {
	Format    string    `json:"format"`
	Variant   string    `json:"variant"`
	Engine    string    `json:"engine"` // "cuda" or "metal"
	Toolchain Toolchain `json:"toolchain"`
	Recipe    Repo      `json:"recipe"`
	Upstream  Repo      `json:"upstream"`
	// PatchedHead is the engine repository's HEAD after the patch command
	// applied upstream's series; empty means the series adds no commits, so
	// HEAD stays at Upstream.Commit.
	PatchedHead string `json:"patched_head,omitempty"`
	// Series is the recipe's list of upstream's patches (sha256sum's
	// format, paths relative to its directory), checked before the patch
	// command runs. Empty: the patch command checks its own series.
	Series string `json:"series,omitempty"`
	Build  Build  `json:"build"`
}

// Toolchain names the compilers a build needs.
type Toolchain struct {
	Zig   string `json:"zig"`             // exact version, e.g. "0.17.0"
	CUDA  string `json:"cuda,omitempty"`  // major version of nvcc, e.g. "13"
	Metal bool   `json:"metal,omitempty"` // Xcode's Metal compiler
}

// Repo is one git repository at an exact commit.
type Repo struct {
	Name   string       `json:"name"`   // directory name of the checkout and of a mirror's clone
	URL    string       `json:"url"`    // where it is fetched from without --source
	Commit string       `json:"commit"` // full 40-hex commit
	Files  []SourceFile `json:"files,omitempty"`
}

// SourceFile is a file pinned by sha256 in a checkout. An empty SHA256 is
// completed from the checkout at the pinned commit and recorded, never
// invented.
type SourceFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
}

// Build is how the recipe builds the engine. Commands run in the recipe
// checkout; the arguments {upstream} and {out} are replaced by the engine
// checkout and the output directory.
type Build struct {
	// Patch applies upstream's patch series to the engine checkout.
	// Empty: no series.
	Patch []string `json:"patch,omitempty"`
	// Command builds the binaries into {out}.
	Command []string `json:"command"`
	// Binaries are the file names the build writes into {out}; the first is
	// the server that drama serve starts.
	Binaries []string `json:"binaries"`
}

// Complete reports whether every pinned file carries a sha256.
func (s *Sources) Complete() bool {
	for _, f := range s.Recipe.Files {
		if f.SHA256 == "" {
			return false
		}
	}
	for _, f := range s.Upstream.Files {
		if f.SHA256 == "" {
			return false
		}
	}
	return true
}

// Validate checks the fields; errors wrap ErrInvalid and name the field.
func (s *Sources) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	if s.Format != SourcesFormat {
		return bad("format: want %q, got %q", SourcesFormat, s.Format)
	}
	if s.Variant == "" {
		return bad("variant: empty")
	}
	if s.Engine != "cuda" && s.Engine != "metal" {
		return bad("engine: want cuda or metal, got %q", s.Engine)
	}
	if s.Toolchain.Zig == "" {
		return bad("toolchain.zig: empty: name the exact Zig version")
	}
	for _, r := range []struct {
		field string
		repo  Repo
	}{{"recipe", s.Recipe}, {"upstream", s.Upstream}} {
		if r.repo.Name == "" || strings.ContainsAny(r.repo.Name, `/\`) || r.repo.Name == "." || r.repo.Name == ".." {
			return bad("%s.name: want a plain directory name, got %q", r.field, r.repo.Name)
		}
		if r.repo.URL == "" {
			return bad("%s.url: empty", r.field)
		}
		if !IsCommit(r.repo.Commit) {
			return bad("%s.commit: want a full 40-hex commit, got %q", r.field, r.repo.Commit)
		}
		for i, f := range r.repo.Files {
			if !ValidPath(f.Path) {
				return bad("%s.files[%d].path: %q is not a clean relative path", r.field, i, f.Path)
			}
			if f.SHA256 != "" && !hex64.MatchString(f.SHA256) {
				return bad("%s.files[%d].sha256: want 64 lower-case hex digits, got %q", r.field, i, f.SHA256)
			}
		}
	}
	if s.Recipe.Name == s.Upstream.Name {
		return bad("recipe.name and upstream.name are both %q: the checkouts need two names", s.Recipe.Name)
	}
	if s.PatchedHead != "" && !IsCommit(s.PatchedHead) {
		return bad("patched_head: want a full 40-hex commit, got %q", s.PatchedHead)
	}
	if s.Series != "" && !ValidPath(s.Series) {
		return bad("series: %q is not a clean relative path", s.Series)
	}
	if len(s.Build.Command) == 0 {
		return bad("build.command: empty")
	}
	if len(s.Build.Binaries) == 0 {
		return bad("build.binaries: empty: name the files the build makes")
	}
	for i, b := range s.Build.Binaries {
		if b == "" || path.Base(b) != b || b == "." || b == ".." || strings.ContainsRune(b, '\\') {
			return bad("build.binaries[%d]: want a plain file name, got %q", i, b)
		}
		if slices.Contains(s.Build.Binaries[:i], b) {
			return bad("build.binaries[%d]: %q is listed twice", i, b)
		}
	}
	return nil
}

// ParseSources decodes and validates an engine sources pins file. Unknown
// fields are refused; a syntax error names its byte offset.
func ParseSources(data []byte, name string) (*Sources, error) {
	var s Sources
	if err := decodeStrict(data, name, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ReadSourcesFile reads and parses an engine sources pins file.
func ReadSourcesFile(name string) (*Sources, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("pins: %w", err)
	}
	return ParseSources(data, name)
}

// BuiltinSources returns the embedded engine sources pins of a variant.
// Their pinned files carry no digests yet: the model's notes do not give
// them, so they are completed from the checkout at the pinned commit.
func BuiltinSources(variant string) (*Sources, error) {
	data, name, err := readBuiltin(sourcesFS, "builtin/sources/", variant)
	if err != nil {
		return nil, err
	}
	return ParseSources(data, name)
}

// Marshal returns the canonical JSON form of s: two-space indent, a final
// newline.
func (s *Sources) Marshal() ([]byte, error) {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
