package main

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/realclient"
)

// TestDistArchive builds the linux/arm64 release archive with make dist,
// checks it against SHA256SUMS as the README's install section does
// (sha256sum -c), unpacks it and runs what it holds under qemu-user: drama
// version prints the version the archive is named for, and drama plugins
// finds the engine plugins beside drama, accepts their checksums and
// starts them (binfmt_misc runs the arm64 plugins drama starts).
func TestDistArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release archive")
	}
	for _, tool := range []string{"make", "tar", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	qemu := realclient.QEMUAarch64(t)
	root := realclient.ModuleRoot(t)
	dist := t.TempDir()
	const version = "0.0.0-disttest"
	cmd := exec.Command("make", "-C", root, "dist", "DIST="+dist, "PLATFORMS=linux/arm64", "VERSION="+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	const name = "drama-" + version + "-linux-arm64"
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(sums)), "  "+name+".tar.gz") || strings.Count(string(sums), "\n") != 1 {
		t.Fatalf("SHA256SUMS: %v\n%s", err, sums)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dist
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}

	unpacked := t.TempDir()
	if out, err := exec.Command("tar", "-C", unpacked, "-xzf", filepath.Join(dist, name+".tar.gz")).CombinedOutput(); err != nil {
		t.Fatalf("tar -xzf: %v\n%s", err, out)
	}
	top, _ := os.ReadDir(unpacked)
	if len(top) != 1 || top[0].Name() != name {
		t.Fatalf("the archive must hold one directory, %s; it holds %v", name, top)
	}
	dir := filepath.Join(unpacked, name)
	want := []string{"README.md", "docs/ARCHITECTURE.md", "docs/deploy/haproxy.cfg", "docs/serve.md", "drama"}
	if _, err := os.Stat(filepath.Join(root, "LICENSE")); err == nil {
		want = append(want, "LICENSE")
	}
	plugins, _ := filepath.Glob(filepath.Join(root, "plugins", "*", "main.go"))
	if len(plugins) == 0 {
		t.Fatal("no plugins/*/main.go in the tree")
	}
	var names []string
	for _, p := range plugins {
		n := filepath.Base(filepath.Dir(p))
		names = append(names, n)
		want = append(want, "drama-engine-"+n, "drama-engine-"+n+".sha256")
	}
	for _, w := range want {
		if _, err := os.Stat(filepath.Join(dir, w)); err != nil {
			t.Errorf("the archive has no %s: %v", w, err)
		}
	}
	bins := []string{"drama"}
	for _, n := range names {
		bins = append(bins, "drama-engine-"+n)
	}
	for _, b := range bins {
		f, err := elf.Open(filepath.Join(dir, b))
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if f.Machine != elf.EM_AARCH64 {
			t.Errorf("%s is built for %v, want aarch64", b, f.Machine)
		}
		f.Close()
	}

	drama := filepath.Join(dir, "drama")
	env := append(os.Environ(), "DRAMA_PLUGIN_DIR=", "HOME="+t.TempDir())
	run := func(args ...string) []byte {
		t.Helper()
		c := exec.Command(qemu, append([]string{drama}, args...)...)
		c.Env = env
		out, err := c.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("qemu-aarch64 drama %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
		}
		return out
	}
	if out := run("version"); !strings.Contains(string(out), version) {
		t.Errorf("drama version printed %q, want %s", out, version)
	}
	out := run("plugins", "--json", "--root", t.TempDir())
	var rep struct {
		Plugins []struct {
			Name, Path, Source, Checksum, Status, Version, OS, Arch string
		} `json:"plugins"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var found []string
	for _, p := range rep.Plugins {
		if p.Path != filepath.Join(dir, "drama-engine-"+p.Name) || p.Source != "beside drama" || p.Checksum != "ok" || p.Status != "ok" {
			t.Errorf("plugin %s: not found beside drama, accepted and started: %+v", p.Name, p)
			continue
		}
		if p.Version != version || p.OS != "linux" || p.Arch != "arm64" {
			t.Errorf("plugin %s says version %q, %s/%s; want %s, linux/arm64", p.Name, p.Version, p.OS, p.Arch, version)
		}
		found = append(found, p.Name)
	}
	slices.Sort(found)
	if !slices.Equal(found, names) {
		t.Errorf("drama plugins found %v, want %v:\n%s", found, names, out)
	}
}
