package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/drama-tts/drama/internal/filehash"
	"github.com/drama-tts/drama/pins"
)

// Committer is the fixed identity operator patches are committed with, so
// that the same patches on the same HEAD always give the same commit.
const (
	CommitterName  = "drama"
	CommitterEmail = "drama@localhost"
)

// Patch is an operator patch named by its sha256.
type Patch struct {
	File   string
	SHA256 string
}

// Options are the inputs of Install.
type Options struct {
	Root    string        // the drama root
	Sources *pins.Sources // what to build
	// Source is a mirror: a directory of clones, a git bundle, or a base
	// URL. Empty: each repository's own URL.
	Source string
	// Zig and NVCC are the compilers' paths; empty: $ZIG/$NVCC in Env,
	// the PATH, then /opt/zig-<version>/zig and /usr/local/cuda/bin/nvcc.
	Zig, NVCC string
	// Patches are the operator's patches, applied in order after
	// upstream's series; Head is the engine checkout's HEAD they must give.
	Patches []Patch
	Head    string
	// Env is the build's environment (ZIG and NVCC are set on top).
	Env []string
	// Step is called as each step starts and ends; it may be nil.
	Step func(StepEvent)
	// Now is the clock of the record; nil means time.Now.
	Now func() time.Time
}

// StepEvent reports one step of an install.
type StepEvent struct {
	Step   string // toolchain, fetch <name>, files, series, patch, build, install
	Status string // "start", "done" or "skipped" (already done by an earlier run)
	Detail string
}

// BuildError is a build or patch command that failed; Tail is the end of
// its log.
type BuildError struct {
	Step, Log, Tail string
	Err             error
}

// Error implements error.
func (e *BuildError) Error() string {
	return fmt.Sprintf("engine build: %s failed: %v; the log is %s, ending:\n%s", e.Step, e.Err, e.Log, e.Tail)
}

// Unwrap returns the command's error.
func (e *BuildError) Unwrap() error { return e.Err }

// FileError is a pinned file or patch whose sha256 is not the pinned one
// (Got is empty when it is missing). For a pinned file, Repo and Commit are
// the checkout it was looked for in.
type FileError struct {
	What, Path, Want, Got, Fix string
	Repo, Commit               string
}

// Error implements error.
func (e *FileError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("engine build: %s %s: missing: %s", e.What, e.Path, e.Fix)
	}
	return fmt.Sprintf("engine build: %s %s: sha256: want %s, got %s: %s", e.What, e.Path, e.Want, e.Got, e.Fix)
}

// Unwrap returns ErrMismatch.
func (e *FileError) Unwrap() error { return ErrMismatch }

// state is what earlier runs finished, each step with the key of its inputs.
type state struct {
	Patch    string            `json:"patch,omitempty"`
	Build    string            `json:"build,omitempty"`
	Binaries map[string]string `json:"binaries,omitempty"`
}

type installer struct {
	o        Options
	s        *pins.Sources
	g        *git
	work     string
	log      *os.File
	logPath  string
	st       state
	rec      Record
	recipe   string
	upstream string
}

// Install builds and installs the engine that o.Sources pins and returns
// its record; docs/engine-build.md, "What install does", gives the steps.
func Install(ctx context.Context, o Options) (*Record, error) {
	s := o.Sources
	if s == nil {
		return nil, errors.New("engine build: no engine sources pins")
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("engine build: %w", err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if _, err := os.Stat(o.Source); o.Source != "" && err == nil {
		// git runs inside the checkouts: a local mirror is named absolutely.
		if o.Source, err = filepath.Abs(o.Source); err != nil {
			return nil, fmt.Errorf("engine build: mirror %s: %w", o.Source, err)
		}
	}
	in := &installer{o: o, s: s, work: WorkDir(o.Root, s.Variant)}
	in.recipe = filepath.Join(in.work, s.Recipe.Name)
	in.upstream = filepath.Join(in.work, s.Upstream.Name)
	in.rec = Record{Format: RecordFormat, Variant: s.Variant, Engine: s.Engine,
		Recipe:   RepoRecord{Name: s.Recipe.Name, URL: s.Recipe.URL, Commit: s.Recipe.Commit},
		Upstream: RepoRecord{Name: s.Upstream.Name, URL: s.Upstream.URL, Commit: s.Upstream.Commit},
		Patches:  []PatchRecord{}, Files: []FileRecord{}}
	return in.run(ctx)
}

func (in *installer) step(name, status, detail string) {
	if in.o.Step != nil {
		in.o.Step(StepEvent{Step: name, Status: status, Detail: detail})
	}
	if in.log != nil {
		fmt.Fprintf(in.log, "== %s %s %s: %s\n", time.Now().UTC().Format(time.RFC3339), name, status, detail)
	}
}

func (in *installer) run(ctx context.Context) (*Record, error) {
	s := in.s
	// Everything that needs no download comes first.
	if err := in.checkOperatorPatches(ctx); err != nil {
		return nil, err
	}
	in.step("toolchain", "start", "")
	tools, metalErr, err := CheckToolchain(ctx, s.Toolchain, in.o.Zig, in.o.NVCC, in.o.Env)
	if err != nil {
		return nil, err
	}
	in.rec.Toolchain = tools
	in.step("toolchain", "done", toolsLine(tools))
	g, err := newGit()
	if err != nil {
		return nil, err
	}
	in.g = g
	if err := os.MkdirAll(in.work, 0o755); err != nil {
		return nil, fmt.Errorf("engine build: %w", err)
	}
	in.logPath = filepath.Join(in.work, "build.log")
	if in.log, err = os.Create(in.logPath); err != nil {
		return nil, fmt.Errorf("engine build: log: %w", err)
	}
	defer in.log.Close()
	in.rec.Log = in.logPath
	in.readState()

	if err := in.fetch(ctx, s.Recipe, in.recipe, &in.rec.Recipe, true); err != nil {
		return nil, err
	}
	if err := in.checkFiles(ctx); err != nil {
		return nil, err
	}
	if err := in.checkSeries(ctx); err != nil {
		return nil, err
	}
	if err := in.fetch(ctx, s.Upstream, in.upstream, &in.rec.Upstream, false); err != nil {
		return nil, err
	}
	if err := in.patch(ctx); err != nil {
		return nil, err
	}
	if metalErr != nil {
		in.step("build", "skipped", metalErr.Error())
		return nil, metalErr
	}
	bins, err := in.build(ctx)
	if err != nil {
		return nil, err
	}
	return in.install(bins)
}

func toolsLine(t Tools) string {
	parts := []string{"zig " + t.ZigVersion + " (" + t.Zig + ")"}
	if t.NVCC != "" {
		parts = append(parts, "nvcc "+t.CUDAVersion+" ("+t.NVCC+")")
	}
	if t.Metal != "" {
		parts = append(parts, "metal: "+t.Metal)
	}
	return strings.Join(parts, ", ")
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (in *installer) checkOperatorPatches(ctx context.Context) error {
	if len(in.o.Patches) > 0 && !pins.IsCommit(in.o.Head) {
		return fmt.Errorf("engine build: operator patches need the HEAD they give, as a full 40-hex commit (got %q)", in.o.Head)
	}
	for _, p := range in.o.Patches {
		if !hex64.MatchString(p.SHA256) {
			return fmt.Errorf("engine build: patch %s: want its sha256 as 64 lower-case hex digits, got %q", p.File, p.SHA256)
		}
		got, _, err := filehash.SHA256(ctx, p.File, nil)
		if err != nil {
			return fmt.Errorf("engine build: patch %s: %w", p.File, err)
		}
		if got != p.SHA256 {
			return &FileError{What: "patch", Path: p.File, Want: p.SHA256, Got: got, Fix: "this is not the patch you named; check the file, or name the sha256 of the patch you reviewed"}
		}
		in.rec.Patches = append(in.rec.Patches, PatchRecord{File: filepath.Base(p.File), SHA256: p.SHA256})
	}
	return nil
}

func (in *installer) readState() {
	data, err := os.ReadFile(filepath.Join(in.work, "state.json"))
	if err == nil {
		_ = json.Unmarshal(data, &in.st) // an unreadable state means every step runs again
	}
}

func (in *installer) saveState() error {
	data, err := json.MarshalIndent(&in.st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(in.work, "state.json"), append(data, '\n'), 0o644)
}

func (in *installer) fetch(ctx context.Context, repo pins.Repo, dir string, rr *RepoRecord, clean bool) error {
	name := "fetch " + repo.Name
	if clean && in.g.atCleanCommit(ctx, dir, repo.Commit) {
		if d, err := in.g.dirty(ctx, dir, true); err == nil && d == "" {
			in.step(name, "skipped", "already at "+repo.Commit)
			return nil
		}
	}
	in.step(name, "start", repo.Commit)
	if err := in.g.ensureRepo(ctx, dir); err != nil {
		return fmt.Errorf("engine build: %s: %w", repo.Name, err)
	}
	in.g.recover(ctx, dir)
	from, err := in.g.fetch(ctx, dir, repo, candidates(repo, in.o.Source))
	if err != nil {
		return err
	}
	rr.FetchedFrom = from
	if clean { // the engine checkout is put at its commit by the patch step
		if err := in.g.checkout(ctx, dir, repo); err != nil {
			return fmt.Errorf("engine build: %s: %w", repo.Name, err)
		}
	}
	in.step(name, "done", "at "+repo.Commit)
	return nil
}

func (in *installer) checkFiles(ctx context.Context) error {
	in.step("files", "start", fmt.Sprintf("%d pinned files", len(in.s.Recipe.Files)))
	completed := 0
	for _, f := range in.s.Recipe.Files {
		p := filepath.Join(in.recipe, filepath.FromSlash(f.Path))
		got, _, err := filehash.SHA256(ctx, p, nil)
		if errors.Is(err, os.ErrNotExist) {
			return &FileError{What: "pinned file", Path: f.Path, Want: f.SHA256, Repo: in.s.Recipe.Name, Commit: in.s.Recipe.Commit,
				Fix: fmt.Sprintf("%s at %s does not have it: the pins and the commit disagree", in.s.Recipe.Name, in.s.Recipe.Commit)}
		}
		if err != nil {
			return fmt.Errorf("engine build: %w", err)
		}
		r := FileRecord{Path: f.Path, SHA256: got}
		if f.SHA256 == "" {
			r.Completed = true
			completed++
		} else if got != f.SHA256 {
			return &FileError{What: "pinned file", Path: p, Want: f.SHA256, Got: got, Repo: in.s.Recipe.Name, Commit: in.s.Recipe.Commit,
				Fix: fmt.Sprintf("%s at %s is not what the pins name: check the mirror it was fetched from, or the pins", in.s.Recipe.Name, in.s.Recipe.Commit)}
		}
		in.rec.Files = append(in.rec.Files, r)
	}
	detail := "all match"
	if completed > 0 {
		detail = fmt.Sprintf("%d digests completed from the checkout at %s (the pins give none for them)", completed, in.s.Recipe.Commit)
	}
	in.step("files", "done", detail)
	return nil
}

func (in *installer) checkSeries(ctx context.Context) error {
	if in.s.Series == "" {
		return nil
	}
	in.step("series", "start", in.s.Series)
	sumsPath := filepath.Join(in.recipe, filepath.FromSlash(in.s.Series))
	sums, err := filehash.ReadSums(sumsPath)
	if errors.Is(err, filehash.ErrSumsFormat) {
		return fmt.Errorf("engine build: patch series: %w: %w", err, ErrMismatch)
	}
	if err != nil {
		return fmt.Errorf("engine build: patch series: %w", err)
	}
	for _, sum := range sums {
		if !pins.ValidPath(sum.Name) {
			return fmt.Errorf("engine build: %s line %d: %w: %q is not a clean relative path", sumsPath, sum.Line, ErrMismatch, sum.Name)
		}
		p := filepath.Join(filepath.Dir(sumsPath), filepath.FromSlash(sum.Name))
		got, _, err := filehash.SHA256(ctx, p, nil)
		if errors.Is(err, os.ErrNotExist) {
			return &FileError{What: "upstream patch", Path: p, Want: sum.SHA256, Fix: "the series lists a patch the recipe does not have"}
		}
		if err != nil {
			return fmt.Errorf("engine build: %w", err)
		}
		if got != sum.SHA256 {
			return &FileError{What: "upstream patch", Path: p, Want: sum.SHA256, Got: got,
				Fix: "the patch is not the one " + in.s.Series + " lists: the recipe checkout is not the pinned one"}
		}
	}
	n := len(sums)
	in.step("series", "done", fmt.Sprintf("%d patches match %s", n, in.s.Series))
	return nil
}

// finalHead is the engine checkout's HEAD once every patch is applied.
func (in *installer) finalHead() string {
	if len(in.o.Patches) > 0 {
		return in.o.Head
	}
	if in.s.PatchedHead != "" {
		return in.s.PatchedHead
	}
	return in.s.Upstream.Commit
}

func (in *installer) patchKey() string {
	h := sha256.New()
	fmt.Fprintln(h, in.s.Recipe.Commit, in.s.Upstream.Commit, in.s.PatchedHead, in.o.Head, in.s.Build.Patch)
	for _, p := range in.rec.Patches {
		fmt.Fprintln(h, p.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (in *installer) patchDone(ctx context.Context) bool {
	return in.st.Patch == in.patchKey() && in.g.atCleanCommit(ctx, in.upstream, in.finalHead())
}

func (in *installer) patch(ctx context.Context) error {
	if in.patchDone(ctx) {
		in.step("patch", "skipped", "already at "+in.finalHead())
		in.rec.PatchedHead, in.rec.Head = in.patchedHead(), in.finalHead()
		return nil
	}
	in.st.Patch, in.st.Build = "", ""
	if err := in.saveState(); err != nil {
		return fmt.Errorf("engine build: state: %w", err)
	}
	in.step("patch", "start", "upstream's series")
	if err := in.g.checkout(ctx, in.upstream, in.s.Upstream); err != nil {
		return fmt.Errorf("engine build: %s: %w", in.s.Upstream.Name, err)
	}
	if len(in.s.Build.Patch) > 0 {
		if err := in.runCommand(ctx, "patch", in.s.Build.Patch, ""); err != nil {
			return err
		}
	}
	want := in.patchedHead()
	got, err := in.g.head(ctx, in.upstream)
	if err != nil {
		return fmt.Errorf("engine build: %s: %w", in.s.Upstream.Name, err)
	}
	if got != want {
		return &HeadError{Repo: in.s.Upstream.Name, What: "after upstream's patch series", Want: want, Got: got,
			Fix: "the series did not apply as pinned; the log is " + in.logPath + ":\n" + tail(in.logPath)}
	}
	in.rec.PatchedHead = want
	for i, p := range in.o.Patches {
		env := []string{"GIT_COMMITTER_NAME=" + CommitterName, "GIT_COMMITTER_EMAIL=" + CommitterEmail}
		abs, _ := filepath.Abs(p.File)
		if _, err := in.g.run(ctx, in.upstream, env, "am", "--quiet", "--committer-date-is-author-date", abs); err != nil {
			in.g.recover(ctx, in.upstream)
			return &BuildError{Step: fmt.Sprintf("operator patch %d (%s)", i+1, p.File), Log: in.logPath, Tail: err.Error(), Err: err}
		}
	}
	if len(in.o.Patches) > 0 {
		got, err := in.g.head(ctx, in.upstream)
		if err != nil {
			return err
		}
		if got != in.o.Head {
			return &HeadError{Repo: in.s.Upstream.Name, What: "after your patches", Want: in.o.Head, Got: got, Operator: true,
				Fix: "check the patches and the order they are given in, or, having reviewed the result, name " + got + " as the HEAD they give"}
		}
	}
	in.rec.Head = in.finalHead()
	in.st.Patch = in.patchKey()
	if err := in.saveState(); err != nil {
		return fmt.Errorf("engine build: state: %w", err)
	}
	in.step("patch", "done", "HEAD "+in.rec.Head)
	return nil
}

func (in *installer) patchedHead() string {
	if in.s.PatchedHead != "" {
		return in.s.PatchedHead
	}
	return in.s.Upstream.Commit
}

func (in *installer) buildKey() string {
	h := sha256.New()
	t := in.rec.Toolchain
	fmt.Fprintln(h, in.patchKey(), t.Zig, t.ZigVersion, t.NVCC, t.CUDAVersion, t.Metal, in.s.Build.Command, in.s.Build.Binaries)
	return hex.EncodeToString(h.Sum(nil))
}

func (in *installer) outDir() string { return filepath.Join(in.work, "out") }

// build runs the build command into a fresh output directory and returns
// each binary's sha256.
func (in *installer) build(ctx context.Context) (map[string]string, error) {
	out := in.outDir()
	if in.st.Build == in.buildKey() && in.outMatches(ctx) {
		in.step("build", "skipped", "built by an earlier run")
		return in.st.Binaries, nil
	}
	in.st.Build, in.st.Binaries = "", nil
	if err := in.saveState(); err != nil {
		return nil, fmt.Errorf("engine build: state: %w", err)
	}
	if err := os.RemoveAll(out); err != nil {
		return nil, fmt.Errorf("engine build: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("engine build: %w", err)
	}
	in.step("build", "start", strings.Join(in.s.Build.Command, " "))
	if err := in.runCommand(ctx, "build", in.s.Build.Command, out); err != nil {
		return nil, err
	}
	bins := map[string]string{}
	for _, b := range in.s.Build.Binaries {
		p := filepath.Join(out, b)
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 || st.Size() == 0 {
			return nil, &BuildError{Step: "build", Log: in.logPath, Tail: tail(in.logPath),
				Err: fmt.Errorf("it exited successfully without making the executable %s in %s", b, out)}
		}
		sum, _, err := filehash.SHA256(ctx, p, nil)
		if err != nil {
			return nil, fmt.Errorf("engine build: %w", err)
		}
		bins[b] = sum
	}
	// The checkouts are left as the pins describe them.
	for _, c := range []struct{ name, dir string }{{in.s.Recipe.Name, in.recipe}, {in.s.Upstream.Name, in.upstream}} {
		if d, err := in.g.dirty(ctx, c.dir, false); err != nil || d != "" {
			return nil, &BuildError{Step: "build", Log: in.logPath, Tail: "  " + strings.ReplaceAll(d, "\n", "\n  "),
				Err: fmt.Errorf("it changed tracked files of the %s checkout, which must be left clean", c.name)}
		}
	}
	if got, err := in.g.head(ctx, in.upstream); err != nil || got != in.finalHead() {
		return nil, &HeadError{Repo: in.s.Upstream.Name, What: "after the build", Want: in.finalHead(), Got: got, Fix: "the build moved the engine checkout; run the install again"}
	}
	in.st.Build, in.st.Binaries = in.buildKey(), bins
	if err := in.saveState(); err != nil {
		return nil, fmt.Errorf("engine build: state: %w", err)
	}
	in.step("build", "done", fmt.Sprintf("%d binaries", len(bins)))
	return bins, nil
}

func (in *installer) outMatches(ctx context.Context) bool {
	for _, b := range in.s.Build.Binaries {
		want, ok := in.st.Binaries[b]
		if !ok {
			return false
		}
		if got, _, err := filehash.SHA256(ctx, filepath.Join(in.outDir(), b), nil); err != nil || got != want {
			return false
		}
	}
	return true
}

// runCommand runs a recipe command in the recipe checkout, its output into
// the log.
func (in *installer) runCommand(ctx context.Context, step string, argv []string, out string) error {
	upstream, _ := filepath.Abs(in.upstream)
	outAbs, _ := filepath.Abs(out)
	args := make([]string, len(argv))
	for i, a := range argv {
		a = strings.ReplaceAll(a, "{upstream}", upstream)
		args[i] = strings.ReplaceAll(a, "{out}", outAbs)
	}
	prog := args[0]
	if !filepath.IsAbs(prog) && strings.ContainsRune(prog, '/') {
		prog = filepath.Join(in.recipe, filepath.FromSlash(prog))
	}
	cmd := exec.Command(prog, args[1:]...)
	cmd.Dir = in.recipe
	env := append([]string(nil), in.o.Env...)
	env = append(env, "ZIG="+in.rec.Toolchain.Zig)
	if in.rec.Toolchain.NVCC != "" {
		env = append(env, "NVCC="+in.rec.Toolchain.NVCC)
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = in.log, in.log
	fmt.Fprintf(in.log, "$ %s\n", strings.Join(args, " "))
	from, _ := in.log.Seek(0, io.SeekCurrent)
	err := runGroup(ctx, cmd)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return &BuildError{Step: step, Log: in.logPath, Tail: tailFrom(in.logPath, from), Err: err}
	}
	return nil
}

// install copies each binary beside the record and writes the record.
func (in *installer) install(bins map[string]string) (*Record, error) {
	in.step("install", "start", Dir(in.o.Root, in.s.Variant))
	dir := Dir(in.o.Root, in.s.Variant)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine build: %w", err)
	}
	// Temporary files of an install killed while copying.
	if left, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); err == nil {
		for _, p := range left {
			_ = os.Remove(p)
		}
	}
	in.rec.Binaries = nil
	for _, b := range in.s.Build.Binaries {
		size, err := copyVerified(filepath.Join(in.outDir(), b), filepath.Join(dir, b), bins[b])
		if err != nil {
			return nil, err
		}
		in.rec.Binaries = append(in.rec.Binaries, BinaryRecord{Name: b, Size: size, SHA256: bins[b]})
	}
	in.rec.InstalledAt = in.o.Now().UTC().Format(time.RFC3339)
	if err := writeLock(dir, in.s, in.rec.Files); err != nil {
		return nil, err
	}
	if err := writeRecord(dir, &in.rec); err != nil {
		return nil, err
	}
	in.step("install", "done", fmt.Sprintf("%d binaries recorded in %s", len(in.rec.Binaries), filepath.Join(dir, RecordName)))
	return &in.rec, nil
}

// copyVerified copies src to dst through a synced temporary file and a
// rename, refusing the copy unless its sha256 is want.
func copyVerified(src, dst, want string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("engine build: %w", err)
	}
	defer in.Close()
	var n int64
	err = atomicfile.Write(dst, 0o755, func(f *os.File) error {
		h := sha256.New()
		var err error
		if n, err = io.Copy(io.MultiWriter(f, h), in); err != nil {
			return fmt.Errorf("%s: %w", dst, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			return &FileError{What: "built binary", Path: src, Want: want, Got: got, Fix: "it changed after the build; run the install again"}
		}
		return nil
	})
	var fe *FileError
	if err != nil && !errors.As(err, &fe) {
		err = fmt.Errorf("engine build: %w", err)
	}
	return n, err
}

// tail returns the last lines of a log.
func tail(p string) string { return tailFrom(p, 0) }

// tailFrom returns the last lines of a log after byte offset from.
func tailFrom(p string, from int64) string {
	data, err := os.ReadFile(p)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if from > 0 && from <= int64(len(data)) {
		data = data[from:]
	}
	const keep = 4096
	if len(data) > keep {
		data = data[len(data)-keep:]
		if i := strings.IndexByte(string(data), '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
