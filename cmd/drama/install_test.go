package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall runs make install into a DESTDIR with the binaries the
// end-to-end tests build, then asks the installed drama for its plugins:
// each must be found beside it with its checksum accepted.
func TestMakeInstall(t *testing.T) {
	bin := binaries(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	if _, err := os.Stat(filepath.Join(bin, "drama-engine-metal")); err != nil {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "drama-engine-metal"), "github.com/drama-tts/drama/plugins/metal").CombinedOutput(); err != nil {
			t.Fatalf("build drama-engine-metal: %v\n%s", err, out)
		}
		if err := exec.Command("sh", "-c", "cd "+bin+" && sha256sum drama-engine-metal > drama-engine-metal.sha256").Run(); err != nil {
			t.Fatal(err)
		}
	}
	dest := t.TempDir()
	// -o build: install what is in BIN instead of building again.
	cmd := exec.Command("make", "-C", filepath.Join("..", ".."), "-o", "build", "-o", "plugins", "install", "BIN="+bin, "DESTDIR="+dest, "PREFIX=/opt/drama")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	installed := filepath.Join(dest, "opt", "drama", "bin")
	for _, name := range []string{"drama", "drama-engine-cuda", "drama-engine-cuda.sha256", "drama-engine-metal", "drama-engine-metal.sha256"} {
		if _, err := os.Stat(filepath.Join(installed, name)); err != nil {
			t.Fatalf("not installed: %v", err)
		}
	}
	// A plugin for another OS may fail to start (exit 4); the listing
	// still names where each was found and its checksum.
	out, err := exec.Command(filepath.Join(installed, "drama"), "plugins", "--json", "--root", t.TempDir()).Output()
	if _, ok := err.(*exec.ExitError); err != nil && (!ok || len(out) == 0) {
		t.Fatalf("installed drama plugins: %v\n%s", err, out)
	}
	var rep struct {
		Plugins []struct {
			Name, Path, Source, Checksum string
		} `json:"plugins"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found := map[string]bool{}
	for _, p := range rep.Plugins {
		if filepath.Dir(p.Path) == installed && p.Source == "beside drama" && p.Checksum == "ok" {
			found[p.Name] = true
		}
	}
	if !found["cuda"] || !found["metal"] {
		t.Fatalf("installed plugins not found beside drama with their checksums:\n%s", out)
	}
	// uninstall leaves nothing of ours
	cmd = exec.Command("make", "-C", filepath.Join("..", ".."), "uninstall", "BIN="+bin, "DESTDIR="+dest, "PREFIX=/opt/drama")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make uninstall: %v\n%s", err, out)
	}
	if left, _ := os.ReadDir(installed); len(left) != 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Fatalf("left after uninstall: %s", strings.Join(names, ", "))
	}
}
