// Package realclient finds the real third-party clients that drama's
// conformance tests run against drama's servers: huggingface_hub (Python,
// from ../shared/pylib beside the checkout), and the npm packages pinned in
// scripts/package.json (@huggingface/hub, openai, and playwright-core
// driving Debian's chromium).
//
// A client missing on a machine skips its suite with one line saying so,
// unless DRAMA_REAL_CLIENTS=require is set (as .ci/run does): then a missing
// client fails the test, so that nothing skips in CI. Where DRAMA_SKIP_LOG
// names a file (make test sets it), each skip also appends a line to it, so
// that the run can end with the suites it skipped (scripts/test-skips.sh).
package realclient

import (
	"bytes"
	"context"
	"fmt"
	"github.com/drama-tts/drama/internal/emutest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RequireEnv is the environment variable that turns a missing client from a
// skip into a failure.
const RequireEnv = "DRAMA_REAL_CLIENTS"

// ModuleRoot returns the directory holding drama's go.mod, found by walking
// up from the test's working directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("realclient: no go.mod above the working directory")
		}
		dir = parent
	}
}

// SkipLogEnv is the environment variable naming the file a skip appends
// its line to (emutest.SkipLogEnv).
const SkipLogEnv = emutest.SkipLogEnv

// missing skips the test with one line, or fails it when clients are required.
func missing(t testing.TB, client, why, fix string) {
	t.Helper()
	msg := fmt.Sprintf("%s not available (%s): %s", client, why, fix)
	if os.Getenv(RequireEnv) == "require" {
		t.Fatalf("%s; %s=require forbids skipping", msg, RequireEnv)
	}
	if err := emutest.LogSkip(t.Name(), client, why, fix); err != nil {
		t.Errorf("%s: %v", SkipLogEnv, err)
	}
	t.Skip(msg)
}

// Client runs one real client's programs.
type Client struct {
	// Name says which client this is, for messages.
	Name string
	// Argv0 is the interpreter (python3 or node).
	Argv0 string
	// Env is added to the environment of every run.
	Env []string
	// Dir is the working directory of every run.
	Dir string
}

// Python returns huggingface_hub's Python client from ../shared/pylib, with
// Xet and telemetry off, or skips.
func Python(t testing.TB) *Client {
	t.Helper()
	root := ModuleRoot(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		missing(t, "huggingface_hub (python3)", "python3 is not on PATH", "install python3")
	}
	pylib := filepath.Join(filepath.Dir(root), "shared", "pylib")
	if _, err := os.Stat(filepath.Join(pylib, "huggingface_hub")); err != nil {
		missing(t, "huggingface_hub", "no "+pylib+"/huggingface_hub", "put ../shared beside the checkout")
	}
	return &Client{
		Name:  "huggingface_hub",
		Argv0: py,
		Dir:   root,
		Env: []string{
			"PYTHONPATH=" + pylib,
			"HF_HUB_DISABLE_XET=1",
			"HF_HUB_DISABLE_TELEMETRY=1",
			"HF_HUB_DISABLE_PROGRESS_BARS=1",
			"PYTHONDONTWRITEBYTECODE=1",
		},
	}
}

// Node returns node with scripts/node_modules holding the npm package pkg
// (for example "openai" or "@huggingface/hub"), or skips.
func Node(t testing.TB, pkg string) *Client {
	t.Helper()
	root := ModuleRoot(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, pkg, "node is not on PATH", "install Node.js 20 or later")
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
		missing(t, pkg, "not installed in scripts/node_modules", "run (cd scripts && npm ci)")
	}
	return &Client{Name: pkg, Argv0: node, Dir: filepath.Join(root, "scripts")}
}

// Result is what one run of a client program printed and how it ended.
type Result struct {
	Stdout, Stderr string
	Err            error
}

// Run runs the client on a program file (relative paths are taken from the
// module root) with args, extra environment variables and a deadline.
func (c *Client) Run(ctx context.Context, timeout time.Duration, env []string, program string, args ...string) Result {
	if !filepath.IsAbs(program) {
		root := c.Dir
		if filepath.Base(root) == "scripts" {
			root = filepath.Dir(root)
		}
		program = filepath.Join(root, program)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Argv0, append([]string{program}, args...)...)
	cmd.Dir = c.Dir
	cmd.Env = append(append(os.Environ(), c.Env...), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: %w after %s", c.Name, filepath.Base(program), ctx.Err(), timeout)
	} else if err != nil {
		err = fmt.Errorf("%s %s: %w\n%s", c.Name, filepath.Base(program), err, strings.TrimSpace(stderr.String()))
	}
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// ChromiumEnv is the variable that gives programs run by a Browser the
// Chromium binary.
const ChromiumEnv = "DRAMA_CHROMIUM"

// Browser is a real browser driven by playwright-core from
// scripts/node_modules.
type Browser struct {
	*Client
	// Executable is the Chromium binary.
	Executable string
}

// Playwright returns Chromium (see Chromium) with node and playwright-core
// to drive it, or skips. Its programs find the binary in $DRAMA_CHROMIUM.
func Playwright(t testing.TB) *Browser {
	t.Helper()
	exe := Chromium(t)
	c := Node(t, "playwright-core")
	c.Name = "playwright-core (chromium)"
	c.Env = append(c.Env, ChromiumEnv+"="+exe)
	return &Browser{Client: c, Executable: exe}
}
