package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// What users of ollama and hf type: pull and ps are fetch and status,
// stop is a command, and the names of other tools suggest drama's.
func TestOtherToolsWords(t *testing.T) {
	root := NewRootCmd(cmdutil.NewFactory("test"))
	for word, want := range map[string]string{"pull": "fetch", "ps": "status", "stop": "stop", "ls": "list"} {
		cmd, _, err := root.Find([]string{word})
		if err != nil || cmd.Name() != want {
			t.Errorf("drama %s: %v, want drama %s", word, err, want)
		}
	}
	ctx := context.Background()
	for word, want := range map[string]string{"download": "fetch", "top": "status", "running": "status", "env": "doctor", "run": "serve", "start": "serve"} {
		code, _, errOut := runCLI(t, ctx, word)
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, "did you mean") || !strings.Contains(errOut, " "+want) {
			t.Errorf("drama %s: %d %q, want a suggestion of %s", word, code, errOut, want)
		}
	}
	// drama ps runs drama status: on a root with no server, nothing listed.
	if code, out, errOut := runCLI(t, ctx, "ps", "--root", t.TempDir()); code != 0 || out != "" {
		t.Fatalf("drama ps: %d %q %q", code, out, errOut)
	}
}

// drama version names the version, the commit, Go and the platform.
func TestVersionSaysCommitGoAndPlatform(t *testing.T) {
	ctx := context.Background()
	code, out, _ := runCLI(t, ctx, "version")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 4 || lines[0] != "drama test" || !strings.HasPrefix(lines[1], "commit:   ") ||
		lines[2] != "go:       "+runtime.Version() || lines[3] != "platform: "+runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("%d %q", code, out)
	}
	code, out, _ = runCLI(t, ctx, "version", "--json")
	var v VersionInfo
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Version != "test" || v.Go != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("%d %v %q", code, err, out)
	}
}

// The Makefile's version is git describe --tags of the checkout: before
// any tag v0.0.0 with the count and commit, at a tag the tag, after it the
// commits since and the commit.
func TestMakefileVersionFromTags(t *testing.T) {
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("no " + tool)
		}
	}
	mk, err := filepath.Abs(filepath.Join("..", "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", args, err, b)
		}
		return strings.TrimSpace(string(b))
	}
	version := func() string {
		t.Helper()
		cmd := exec.Command("make", "-s", "-f", mk, "version")
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make version: %v\n%s", err, b)
		}
		return strings.TrimSpace(string(b))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "one")
	if v, want := version(), "v0.0.0-1-g"+git("rev-parse", "--short", "HEAD"); v != want {
		t.Errorf("untagged: %q, want %q", v, want)
	}
	git("tag", "-a", "v0.3.0", "-m", "v0.3.0")
	if v := version(); v != "v0.3.0" {
		t.Errorf("at the tag: %q", v)
	}
	git("commit", "-q", "--allow-empty", "-m", "two")
	if v, want := version(), "v0.3.0-1-g"+git("rev-parse", "--short", "HEAD"); v != want {
		t.Errorf("after the tag: %q, want %q", v, want)
	}
}
