package build

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/pins"
)

// git runs the system's git with an environment that keeps the user's
// configuration from changing what is fetched or committed.
type git struct {
	bin string
	env []string
}

func newGit() (*git, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("engine build: git not found on the PATH: install git (Debian: apt-get install git; macOS: xcode-select --install)")
	}
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"LC_ALL=C")
	return &git{bin: bin, env: env}, nil
}

// run runs git in dir and returns its trimmed standard output; an error
// carries git's standard error.
func (g *git) run(ctx context.Context, dir string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, g.bin, append([]string{"-c", "advice.detachedHead=false", "-c", "core.hooksPath=" + os.DevNull}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), g.env...), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(out.String()), nil
}

func (g *git) head(ctx context.Context, dir string) (string, error) {
	return g.run(ctx, dir, nil, "rev-parse", "HEAD")
}

func (g *git) hasCommit(ctx context.Context, dir, commit string) bool {
	_, err := g.run(ctx, dir, nil, "cat-file", "-e", commit+"^{commit}")
	return err == nil
}

// dirty lists changed tracked files (and untracked ones when untracked).
func (g *git) dirty(ctx context.Context, dir string, untracked bool) (string, error) {
	u := "--untracked-files=no"
	if untracked {
		u = "--untracked-files=normal"
	}
	return g.run(ctx, dir, nil, "status", "--porcelain", u)
}

// recover undoes what an interrupted earlier run may have left: a stale
// index lock and an unfinished git am.
func (g *git) recover(ctx context.Context, dir string) {
	_ = os.Remove(filepath.Join(dir, ".git", "index.lock"))
	if _, err := os.Stat(filepath.Join(dir, ".git", "rebase-apply")); err == nil {
		if _, err := g.run(ctx, dir, nil, "am", "--abort"); err != nil {
			_ = os.RemoveAll(filepath.Join(dir, ".git", "rebase-apply"))
		}
	}
}

// ensureRepo makes dir a git repository (git init is idempotent).
func (g *git) ensureRepo(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_, err := g.run(ctx, dir, nil, "init", "-q")
	return err
}

// CommitError is a pinned commit that no source holds, or that could not be
// fetched from any (Unreachable: every place tried failed before answering).
type CommitError struct {
	Repo, Commit string
	Tried        []string
	Errs         []string
	Unreachable  bool
}

// Error implements error.
func (e *CommitError) Error() string {
	if e.Unreachable {
		return fmt.Sprintf("engine build: %s: could not fetch commit %s from %s (%s): check the network and the address, or fetch from a mirror (a directory of clones, a git bundle, a base URL)",
			e.Repo, e.Commit, strings.Join(e.Tried, ", "), strings.Join(e.Errs, "; "))
	}
	return fmt.Sprintf("engine build: %s: commit %s is not in %s (%s): fetch from a mirror that holds the pinned commit",
		e.Repo, e.Commit, strings.Join(e.Tried, ", "), strings.Join(e.Errs, "; "))
}

// fetch makes sure the repository in dir holds commit, fetching it from
// the first candidate that has it, and returns that candidate.
func (g *git) fetch(ctx context.Context, dir string, repo pins.Repo, candidates []string) (string, error) {
	if g.hasCommit(ctx, dir, repo.Commit) {
		return "", nil
	}
	ce := &CommitError{Repo: repo.Name, Commit: repo.Commit, Tried: candidates, Unreachable: true}
	for _, c := range candidates {
		_, err := g.run(ctx, dir, nil, "fetch", "--no-tags", "--quiet", c, repo.Commit)
		if err != nil && ctx.Err() == nil {
			// Servers that refuse a bare commit id, and bundles, give
			// their refs instead.
			_, err = g.run(ctx, dir, nil, "fetch", "--no-tags", "--quiet", c,
				"+refs/heads/*:refs/drama/heads/*", "+refs/tags/*:refs/drama/tags/*")
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if err != nil {
			ce.Errs = append(ce.Errs, err.Error())
			continue
		}
		ce.Unreachable = false
		if g.hasCommit(ctx, dir, repo.Commit) {
			return c, nil
		}
		ce.Errs = append(ce.Errs, c+" has no such commit")
	}
	return "", ce
}

// candidates are the places repo is fetched from: its URL without a
// source; in a directory of clones <dir>/<name>, <dir>/<name>.git,
// <dir>/<owner>/<name>(.git); a bundle file itself; under another base URL
// <url>/<name>.git, <url>/<name>, <url>/<owner>/<name>.git.
func candidates(repo pins.Repo, source string) []string {
	if source == "" {
		return []string{repo.URL}
	}
	owner, name := ownerName(repo)
	rel := []string{repo.Name, repo.Name + ".git"}
	if name != "" && name != repo.Name {
		rel = append(rel, name, name+".git")
	}
	if owner != "" {
		rel = append(rel, owner+"/"+name, owner+"/"+name+".git")
	}
	if st, err := os.Stat(source); err == nil {
		if !st.IsDir() {
			return []string{source} // a git bundle
		}
		var out []string
		for _, r := range rel {
			p := filepath.Join(source, filepath.FromSlash(r))
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return []string{filepath.Join(source, repo.Name)} // fails with git's own words
		}
		return out
	}
	base := strings.TrimSuffix(source, "/")
	out := []string{base + "/" + repo.Name + ".git", base + "/" + repo.Name}
	if owner != "" {
		out = append(out, base+"/"+owner+"/"+name+".git")
	}
	return out
}

// ownerName splits a repository URL's last two path elements.
func ownerName(repo pins.Repo) (owner, name string) {
	p := repo.URL
	if u, err := url.Parse(repo.URL); err == nil && u.Path != "" {
		p = u.Path
	}
	p = strings.TrimSuffix(strings.TrimSuffix(p, "/"), ".git")
	name = path.Base(p)
	owner = path.Base(path.Dir(p))
	if owner == "." || owner == "/" {
		owner = ""
	}
	return owner, name
}

// HeadError is a checkout whose HEAD is not the pinned one. Operator is
// set when Want is the HEAD the operator's own patches were to give
// (Options.Head) and Got the one they gave.
type HeadError struct {
	Repo, What, Want, Got string
	Fix                   string
	Operator              bool
}

// Error implements error.
func (e *HeadError) Error() string {
	return fmt.Sprintf("engine build: %s: HEAD %s: want %s, got %s: %s", e.Repo, e.What, e.Want, e.Got, e.Fix)
}

// Unwrap returns ErrMismatch.
func (e *HeadError) Unwrap() error { return ErrMismatch }

// checkout puts dir at commit with a clean tree.
func (g *git) checkout(ctx context.Context, dir string, repo pins.Repo) error {
	g.recover(ctx, dir)
	if _, err := g.run(ctx, dir, nil, "checkout", "-q", "--force", "--detach", repo.Commit); err != nil {
		return err
	}
	if _, err := g.run(ctx, dir, nil, "clean", "-q", "-fdx"); err != nil {
		return err
	}
	got, err := g.head(ctx, dir)
	if err != nil {
		return err
	}
	if got != repo.Commit {
		return &HeadError{Repo: repo.Name, What: "after checkout", Want: repo.Commit, Got: got, Fix: "the checkout at " + dir + " is damaged: remove it and run the install again"}
	}
	return nil
}

// atCleanCommit reports whether dir is a checkout at want with no changed
// tracked files.
func (g *git) atCleanCommit(ctx context.Context, dir, want string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".git", "rebase-apply")); err == nil {
		return false
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); err == nil {
		return false
	}
	got, err := g.head(ctx, dir)
	if err != nil || got != want {
		return false
	}
	d, err := g.dirty(ctx, dir, false)
	return err == nil && d == ""
}
