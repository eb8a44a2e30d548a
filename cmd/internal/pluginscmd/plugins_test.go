package pluginscmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/host"
)

func TestMain(m *testing.M) {
	enginetest.ServeChild(map[string]func() engine.Engine{"fake": func() engine.Engine { return enginetest.NewFake() }})
	os.Exit(m.Run())
}

func TestFlags(t *testing.T) {
	dir := func(want string) func(*Options) bool { return func(o *Options) bool { return o.PluginDir == want } }
	cmdtest.CheckFlags(t, NewCmd, []cmdtest.FlagCase[Options]{
		{Check: dir("")},
		{Args: []string{"--plugin-dir", "/x"}, Check: dir("/x")},
		{Args: []string{"extra"}, WantErr: "unknown command"},
		{Args: []string{"--nope"}, WantErr: "unknown flag"},
	})
}

// setup puts a working plugin (the test binary serving a fake engine) and
// a plugin without a checksum file into a directory.
func setup(t *testing.T) (dir string) {
	t.Setenv(enginetest.ServeEnv, "fake")
	good := enginetest.TestBinaryPlugin(t, "fake")
	dir = filepath.Dir(good)
	bad := filepath.Join(dir, host.BinaryName("nosum"))
	os.WriteFile(bad, []byte("#!/bin/sh\nexit 1\n"), 0o755)
	return dir
}

func newOpts(t *testing.T, ios *cmdutil.IOStreams, dir string) *Options {
	f := cmdtest.Factory(ios, "DRAMA_HOME", t.TempDir())
	return &Options{F: f, PluginDir: dir, Executable: func() (string, error) { return "/nonexistent/drama", nil }, Timeout: 30e9}
}

func TestRunTable(t *testing.T) {
	dir := setup(t)
	ios, _, out, errOut := cmdtest.IOStreams()
	err := run(context.Background(), newOpts(t, ios, dir))
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch {
		t.Fatalf("exit = %d (%v), want %d for the refused plugin", cmdutil.ExitCode(err), err, cmdutil.ExitMismatch)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout = %q, want two rows", out)
	}
	fake := strings.Split(lines[0], "\t")
	if fake[0] != "fake" || fake[1] != "0.0.0-test" || fake[2] != "1" || !strings.Contains(fake[4], "stream") || fake[5] != "ok" || fake[6] != "ok" {
		t.Errorf("fake row = %q", fake)
	}
	nosum := strings.Split(lines[1], "\t")
	if nosum[0] != "nosum" || nosum[5] != "missing" || nosum[6] != "refused" {
		t.Errorf("nosum row = %q", nosum)
	}
	if !strings.Contains(errOut.String(), "sha256sum drama-engine-nosum > drama-engine-nosum.sha256") {
		t.Errorf("stderr = %q, want what to do", errOut)
	}
}

func TestRunJSON(t *testing.T) {
	dir := setup(t)
	os.Remove(filepath.Join(dir, host.BinaryName("nosum")))
	ios, _, out, _ := cmdtest.IOStreams()
	opts := newOpts(t, ios, dir)
	opts.F.Global.JSON = true
	if err := run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if len(rep.Plugins) != 1 || rep.Plugins[0].APIVersion != engine.APIVersion || rep.Plugins[0].Checksum != "ok" {
		t.Fatalf("report = %+v", rep)
	}
	if rep.Dirs[0].Path != dir || rep.Dirs[0].Source != host.SourceFlag || len(rep.Dirs) != 3 {
		t.Errorf("dirs = %+v, want the flag's first, then beside drama and the root's", rep.Dirs)
	}
}

func TestRunNone(t *testing.T) {
	ios, _, out, errOut := cmdtest.IOStreams()
	ios.SetStdoutTTY(true)
	if err := run(context.Background(), newOpts(t, ios, t.TempDir())); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || !strings.Contains(errOut.String(), "no engine plugins") {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}
}

func TestRunMismatchedPlugin(t *testing.T) {
	dir := setup(t)
	os.Remove(filepath.Join(dir, host.BinaryName("nosum")))
	p := filepath.Join(dir, host.BinaryName("fake"))
	os.WriteFile(p+host.ChecksumSuffix, []byte(strings.Repeat("00", 32)+"  drama-engine-fake\n"), 0o644)
	ios, _, out, errOut := cmdtest.IOStreams()
	ios.SetStdoutTTY(true)
	err := run(context.Background(), newOpts(t, ios, dir))
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch {
		t.Fatalf("exit = %d", cmdutil.ExitCode(err))
	}
	if !strings.Contains(out.String(), "NAME") || !strings.Contains(out.String(), "mismatch") {
		t.Errorf("stdout = %q", out)
	}
	if !strings.Contains(errOut.String(), "want 0000") {
		t.Errorf("stderr = %q", errOut)
	}
}
