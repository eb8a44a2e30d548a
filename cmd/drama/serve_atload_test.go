package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesMismatchedFiles: a pinned file of the wrong size stops
// drama serve before the engine starts, with exit 3 and the check to run
// with the user's --root.
func TestServeRefusesMismatchedFiles(t *testing.T) {
	bin := binaries(t)
	root, _ := qualifyRoot(t)
	os.WriteFile(filepath.Join(root, "full", "codec.pth"), []byte("short"), 0o644)
	cmd := exec.Command(filepath.Join(bin, "drama"), "serve", "--root", root, "--plugin-dir", bin, "--engine-bin", filepath.Join(bin, "tensorfold-standin"),
		"--addr", freeAddr(t), "--admission", "off")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 3 || !strings.Contains(string(out), "codec.pth: size want 1000, got 5") ||
		!strings.Contains(string(out), "drama verify --variant full --level size --root "+root) || strings.Contains(string(out), "standin: args") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if left := processesRunning(t, bin); len(left) > 0 {
		t.Fatalf("processes left: %q", left)
	}
}

// TestServeRequireQualified: drama serve on an installed variant with no
// marker lists the model as not qualified, and with --require-qualified
// answers speech 503 naming the qualify command with the user's flags.
func TestServeRequireQualified(t *testing.T) {
	bin := binaries(t)
	root, _ := qualifyRoot(t)
	standin := filepath.Join(bin, "tensorfold-standin")
	s := launchServe(t, "", root, nil, "--require-qualified", "--verify", "sha256")
	resp, err := http.Get(s.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list struct {
		Data []struct {
			ID            string `json:"id"`
			Qualified     *bool  `json:"qualified"`
			Qualification string `json:"qualification"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || len(list.Data) != 1 || list.Data[0].Qualified == nil || *list.Data[0].Qualified || list.Data[0].Qualification != "unqualified" {
		t.Fatalf("GET /v1/models: %s", body)
	}
	r, data := speak(t, s.url, `{"input":"Hello.","stream":false}`)
	want := "not qualified on this host: run drama qualify --variant full --engine-bin " + standin + " --plugin-dir " + bin + " --accept-native-numerics --root " + root
	if r.StatusCode != 503 || !strings.Contains(string(data), want) {
		t.Fatalf("speech: %d %s\nwant %s", r.StatusCode, data, want)
	}
	if !strings.Contains(s.stderr.String(), "match the pins") {
		t.Fatalf("no verification in the log:\n%s", s.stderr)
	}
}
