package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
)

// The everyday commands are wired into drama, each with --json.
func TestEverydayCommandsAreWired(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("fetch:\n  workers: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		ios, _, out, errOut := cmdtest.IOStreams()
		f := cmdtest.Factory(ios, "HOME", t.TempDir(), "DRAMA_CONFIG", cfg)
		return Run(context.Background(), f, args), out.String(), errOut.String()
	}
	for _, args := range [][]string{{"list"}, {"status"}, {"config", "show"}} {
		code, out, errOut := run(append(args, "--root", root, "--json")...)
		var doc map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Errorf("drama %s --json: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	if code, out, _ := run("config", "show", "--root", root); code != 0 || !strings.Contains(out, "fetch.workers\t--workers\t5\tfile "+cfg+":2\n") {
		t.Errorf("config show: %d\n%s", code, out)
	}
	if code, _, errOut := run("rm", "nvfp4", "--root", root); code != cmdutil.ExitUsage || !strings.Contains(errOut, "nvfp4 is not installed in "+root) {
		t.Errorf("rm: %d %s", code, errOut)
	}
	// A bad config file stops the commands it configures, with its line.
	if err := os.WriteFile(cfg, []byte("fetch:\n  wrokers: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run("fetch", "--root", root); code != cmdutil.ExitUsage || !strings.Contains(errOut, cfg+":2: unknown key fetch.wrokers") {
		t.Errorf("fetch with a bad config: %d %s", code, errOut)
	}
	if code, _, errOut := run("list", "--root", root); code != 0 {
		t.Errorf("list with a bad config: %d %s", code, errOut)
	}
}

// drama service install takes drama serve's own flags, given by the
// command tree, and passes them on to the service; its status runs the
// tree's drama status.
func TestServiceInstallTakesServeFlags(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	code, out, errOut := runCLI(t, context.Background(), "service", "install", "--print", "--root", root, "--variant", "nvfp4",
		"--grace", "30s", "--max-queue", "8", "--allow-origin", "https://a.example", "--long-form", "--prefix-cache", "0")
	want := " serve --root " + root + " --variant nvfp4 --allow-origin https://a.example --grace 30s --long-form --max-queue 8 --prefix-cache 0\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d: want %q in\n%s\n%s", code, want, out, errOut)
	}
	if code, _, errOut := runCLI(t, context.Background(), "service", "install", "--print", "--max-queue", "many"); code != cmdutil.ExitUsage || !strings.Contains(errOut, "max-queue") {
		t.Errorf("a value drama serve refuses: exit %d %s", code, errOut)
	}
	ios, _, stdout, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "HOME", t.TempDir())
	f.Global.Root, f.Global.JSON = root, true
	st := servicePeers(f).Status()
	st.SetArgs(nil)
	if err := st.Execute(); err != nil || !strings.Contains(stdout.String(), `"servers"`) {
		t.Errorf("the status peer: %v\n%s", err, stdout)
	}
}
