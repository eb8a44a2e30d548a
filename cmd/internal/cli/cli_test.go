package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine/enginetest"
)

func runCLI(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "HOME", t.TempDir())
	code = Run(ctx, f, args)
	return code, out.String(), errOut.String()
}

// demoRoot writes a variant directory and a complete pins file for it.
func demoRoot(t *testing.T) (root, pinsFile string) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, "full", "sub")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(root, "full", "model.safetensors"), []byte(strings.Repeat("weights", 1000)), 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"a":1}`), 0o644)
	pinsFile = filepath.Join(t.TempDir(), "pins.json")
	if code, _, errOut := runCLI(t, context.Background(), "pins", "make", filepath.Join(root, "full"), "-o", pinsFile, "--local", "-q"); code != 0 {
		t.Fatalf("pins make: %d %s", code, errOut)
	}
	return root, pinsFile
}

func TestExitCodes(t *testing.T) {
	root, pinsFile := demoRoot(t)
	ctx := context.Background()
	if code, out, errOut := runCLI(t, ctx, "verify", "--root", root, "--pins", pinsFile, "--level", "sha256"); code != 0 || !strings.Contains(out, "model.safetensors\tok") {
		t.Fatalf("ok: %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, ctx, "verify", "--level", "bogus"); code != cmdutil.ExitUsage || !strings.Contains(errOut, "--help") {
		t.Fatalf("usage: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, ctx, "verify", "--root", filepath.Join(root, "nope"), "--pins", pinsFile); code != cmdutil.ExitFailure || !strings.Contains(errOut, "full is not installed in "+filepath.Join(root, "nope")) {
		t.Fatalf("missing root: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, ctx, "verify", "--root", root, "--variant", "nvfp4", "--pins", pinsFile); code != cmdutil.ExitFailure || !strings.Contains(errOut, "is for variant full, not nvfp4") {
		t.Fatalf("other variant: %d %s", code, errOut)
	}
	os.WriteFile(filepath.Join(root, "full", "sub", "config.json"), []byte(`{"a":2}`), 0o644)
	code, out, errOut := runCLI(t, ctx, "verify", "--root", root, "--pins", pinsFile, "--level", "sha256", "--json")
	if code != cmdutil.ExitMismatch {
		t.Fatalf("mismatch: %d %s", code, errOut)
	}
	var rep struct {
		Variant string `json:"variant"`
		Level   string `json:"level"`
		Files   []struct {
			Path, Status, WantSHA256, GotSHA256 string
		} `json:"files"`
		Extra []string `json:"extra"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if rep.Variant != "full" || rep.Level != "sha256" || len(rep.Files) != 2 || rep.Files[1].Status != "sha256_mismatch" || rep.Extra == nil {
		t.Fatalf("report: %+v", rep)
	}
	var errDoc map[string]any
	if json.Unmarshal([]byte(errOut), &errDoc) != nil || errDoc["exit_code"] != float64(3) {
		t.Fatalf("--json error on stderr: %s", errOut)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if code, _, errOut := runCLI(t, cctx, "verify", "--root", root, "--pins", pinsFile, "--level", "sha256"); code != cmdutil.ExitInterrupted {
		t.Fatalf("interrupted: %d %s", code, errOut)
	}
}

// TestUsageErrorsExit2: wrong arguments and unknown subcommands are usage
// errors everywhere, not only where a command checks them itself.
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"verfy"}, {"pins", "bogus"}, {"verify", "extra"}, {"pins", "diff", "a"},
		{"mirror", "serve", "a", "b"}, {"fetch", "extra"}, {"pins", "lock", "extra"}, {"--bogus"}} {
		code, _, errOut := runCLI(t, context.Background(), args...)
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--help' for usage") {
			t.Errorf("%v: want exit 2 with a pointer to --help, got %d %s", args, code, errOut)
		}
	}
	if _, _, errOut := runCLI(t, context.Background(), "verfy"); !strings.Contains(errOut, "did you mean verify?") {
		t.Errorf("no suggestion for a misspelt command: %s", errOut)
	}
	if code, out, _ := runCLI(t, context.Background(), "pins"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("a bare command group prints its help and exits 0: %d %s", code, out)
	}
}

func TestMalformedPinsNamesOffset(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{\n  \"format\": \"drama-pins/1\",\n  \"files\": [}\n"), 0o644)
	code, _, errOut := runCLI(t, context.Background(), "verify", "--pins", bad)
	if code != cmdutil.ExitMismatch || !strings.Contains(errOut, bad) || !strings.Contains(errOut, "byte offset 42 (line 3, column 13)") {
		t.Fatalf("%d %s", code, errOut)
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := runCLI(t, context.Background(), "version")
	if code != 0 || !strings.HasPrefix(out, "drama test\n") {
		t.Fatalf("%d %q", code, out)
	}
	code, out, _ = runCLI(t, context.Background(), "verify", "--help")
	if code != 0 || !strings.Contains(out, "EXIT STATUS") || !strings.Contains(out, "130") {
		t.Fatalf("help lacks EXIT STATUS:\n%s", out)
	}
	code, out, _ = runCLI(t, context.Background(), "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Fatalf("completion: %d", code)
	}
}

// TestSIGINTExits130 runs the real binary on a large sparse file and
// interrupts it once it hashes (has the file open), so the signal lands
// after drama's handler is installed whatever the machine's speed.
func TestSIGINTExits130(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the drama binary")
	}
	exe := filepath.Join(t.TempDir(), "drama")
	if out, err := exec.Command("go", "build", "-o", exe, "github.com/drama-tts/drama/cmd/drama").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "full"), 0o755)
	const size = 64 << 30 // sparse: takes no disk, reads as zeros
	if err := os.Truncate(filepath.Join(root, "full", "big.bin"), 0); err != nil {
		f, _ := os.Create(filepath.Join(root, "full", "big.bin"))
		f.Close()
	}
	os.Truncate(filepath.Join(root, "full", "big.bin"), size)
	pinsFile := filepath.Join(root, "p.json")
	os.WriteFile(pinsFile, []byte(`{"format":"drama-pins/1","variant":"full","files":[{"path":"big.bin","size":68719476736,"sha256":"`+strings.Repeat("0", 64)+`"}]}`), 0o644)
	cmd := exec.Command(exe, "verify", "--root", root, "--pins", pinsFile, "--level", "sha256", "--no-record")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitOpen(t, cmd.Process.Pid, filepath.Join(root, "full", "big.bin"))
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != cmdutil.ExitInterrupted || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("exit %d (%v), stderr %q", code, err, stderr.String())
	}
}

// waitOpen waits until process pid has name open: it reads /proc/<pid>/fd,
// or where there is no /proc asks lsof.
func waitOpen(t *testing.T, pid int, name string) {
	t.Helper()
	if real, err := filepath.EvalSymlinks(name); err == nil {
		name = real
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	open := func() bool {
		fds, _ := os.ReadDir(fdDir)
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && target == name {
				return true
			}
		}
		return false
	}
	if _, err := os.Stat(fdDir); err != nil {
		lsof, err := exec.LookPath("lsof")
		if err != nil {
			t.Skip("neither /proc nor lsof: cannot see when the process has the file open")
		}
		open = func() bool {
			out, _ := exec.Command(lsof, "-p", strconv.Itoa(pid), "-Fn").Output()
			return slices.Contains(strings.Split(string(out), "\n"), "n"+name)
		}
	}
	if !enginetest.Within(time.Minute, open) {
		t.Fatalf("pid %d never opened %s", pid, name)
	}
}
