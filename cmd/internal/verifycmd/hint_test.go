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
)

func runVerify(t *testing.T, args ...string) error {
	t.Helper()
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.TestFactory(ios)
	return cmdutil.Execute(cmdutil.NewTestRoot(f, NewCmd(f, nil)), append([]string{"verify"}, args...)...)
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
}
