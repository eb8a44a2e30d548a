package verifycmd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/pins/hub"
)

func runVerify(t *testing.T, args ...string) error {
	t.Helper()
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	return cmdtest.Execute(cmdtest.NewRoot(f, NewCmd(f, nil)), append([]string{"verify"}, args...)...)
}

func TestVerifyOnARootWithoutTheVariantSaysHowToInstallIt(t *testing.T) {
	root := t.TempDir()
	err := runVerify(t, "--root", root, "--variant", "nvfp4")
	want := fmt.Sprintf("nvfp4 is not installed in %s: run drama fetch --variant nvfp4 --root %s", root, root)
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant    %s", err, want)
	}
	if strings.Contains(err.Error(), "pins lock") {
		t.Error("the install is missing, not the digests")
	}
}

func TestVerifyRepairHintRepeatsRootAndPins(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "full")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("something else"))
	pinsFile := filepath.Join(t.TempDir(), "my pins.json")
	pinsJSON := fmt.Sprintf(`{"format": "drama-pins/1", "variant": "full", "repo": "demo/drama-demo", "repo_type": "model",
 "revision": "%s", "license": "demo", "engine": "cuda", "serve_flags": [], "memory_gib": 0,
 "files": [{"path": "config.json", "size": 14, "sha256": "%s"}]}`, strings.Repeat("a", 40), hex.EncodeToString(sum[:]))
	if err := os.WriteFile(pinsFile, []byte(pinsJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runVerify(t, "--root", root, "--pins", pinsFile)
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch {
		t.Fatalf("exit %d: %v", cmdutil.ExitCode(err), err)
	}
	want := fmt.Sprintf("run drama fetch --variant full --pins '%s' --root %s to repair them", pinsFile, root)
	if !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("err = %v\nwant it to end %q", err, want)
	}
	// fetched from a mirror: the repair fetches from it again
	if err := hub.WriteSource(dir, "http://10.0.0.5:8080"); err != nil {
		t.Fatal(err)
	}
	err = runVerify(t, "--root", root, "--pins", pinsFile)
	want = fmt.Sprintf("run drama fetch --variant full --pins '%s' --endpoint http://10.0.0.5:8080 --root %s to repair them", pinsFile, root)
	if !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("err = %v\nwant it to end %q", err, want)
	}
}

// verify's table in the three modes: MiB on a terminal as fetch shows
// them, bytes when piped, numbers in JSON.
func TestVerifyTableModes(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "full")
	os.MkdirAll(dir, 0o755)
	data := make([]byte, 3<<20)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), data, 0o644)
	sum := sha256.Sum256(data)
	pinsFile := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(pinsFile, []byte(fmt.Sprintf(`{"format": "drama-pins/1", "variant": "full", "repo": "demo/drama-demo", "repo_type": "model",
 "revision": "%s", "license": "demo", "engine": "cuda", "serve_flags": [], "memory_gib": 0,
 "files": [{"path": "model.safetensors", "size": %d, "sha256": "%s"}]}`, strings.Repeat("a", 40), len(data), hex.EncodeToString(sum[:]))), 0o644)
	run := func(tty, jsonFlag bool) string {
		ios, _, out, _ := cmdtest.IOStreams()
		ios.SetStdoutTTY(tty)
		f := cmdtest.Factory(ios)
		args := []string{"verify", "--root", root, "--pins", pinsFile}
		if jsonFlag {
			args = append(args, "--json")
		}
		if err := cmdtest.Execute(cmdtest.NewRoot(f, NewCmd(f, nil)), args...); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := run(true, false); !strings.Contains(got, "model.safetensors  ok      3.0 MiB") || !strings.HasPrefix(got, "PATH") {
		t.Errorf("terminal:\n%s", got)
	}
	if got := run(false, false); got != "model.safetensors\tok\t3145728\tsize\t\n" {
		t.Errorf("piped: %q", got)
	}
	if got := run(false, true); !strings.Contains(got, `"got_size": 3145728`) {
		t.Errorf("json: %s", got)
	}
}

// TestVerifyPinsWithoutDigestsUseTheLock: --pins naming files without
// digests verifies them by the digests of the root's lock file, which a
// fetch with those pins wrote; a file the lock lacks leaves them
// incomplete.
func TestVerifyPinsWithoutDigestsUseTheLock(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "full")
	os.MkdirAll(dir, 0o755)
	data := []byte("the config\n")
	os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
	sum := sha256.Sum256(data)
	head := fmt.Sprintf(`{"format": "drama-pins/1", "variant": "full", "repo": "demo/drama-demo", "repo_type": "model",
 "revision": "%s", "license": "demo", "engine": "cuda", "serve_flags": [], "memory_gib": 0, `, strings.Repeat("a", 40))
	os.WriteFile(filepath.Join(dir, "pins.lock.json"), []byte(head+fmt.Sprintf(`"files": [{"path": "config.json", "size": %d, "sha256": "%s"}]}`, len(data), hex.EncodeToString(sum[:]))), 0o644)
	pinsFile := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(pinsFile, []byte(head+`"files": [{"path": "config.json", "size": 0}]}`), 0o644)
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	if err := cmdtest.Execute(cmdtest.NewRoot(f, NewCmd(f, nil)), "verify", "--root", root, "--pins", pinsFile, "--level", "sha256"); err != nil {
		t.Fatalf("verify --pins without digests, the lock holding them: %v", err)
	}
	if got := out.String(); got != "config.json\tok\t11\tsha256\t\n" {
		t.Errorf("verified by %q, want config.json by sha256", got)
	}
	os.WriteFile(pinsFile, []byte(head+`"files": [{"path": "config.json"}, {"path": "codec.pth"}]}`), 0o644)
	if err := runVerify(t, "--root", root, "--pins", pinsFile); err == nil || !strings.Contains(err.Error(), "pins lock") {
		t.Fatalf("a file the lock lacks: %v, want the advice to lock the pins", err)
	}
}
