package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/internal/emutest"
)

// The README's stand-in example, as written (no --admission, no installed
// variant), on a fresh root given by DRAMA_HOME: it serves; its log is one
// NDJSON stream when piped; a second drama serve on the root names the
// first; the first's record goes when it stops.
func TestServeReadmeStandInExample(t *testing.T) {
	bin := binaries(t)
	root := filepath.Join(t.TempDir(), "fresh-root")
	addr := freeAddr(t)
	cmd := exec.Command(filepath.Join(bin, "drama"), "serve", "--engine-bin", filepath.Join(bin, "tensorfold-standin"), "--addr", addr, "--plugin-dir", bin)
	cmd.Env = append(os.Environ(), "DRAMA_HOME="+root, "TENSORFOLD_STANDIN_LOAD_TIME=50ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()
	url := "http://" + addr
	deadline := time.Now().Add(emutest.Scale(30 * time.Second))
	for ready := false; !ready; {
		if resp, err := http.Get(url + "/ready"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == 200
		}
		select {
		case err := <-done:
			t.Fatalf("drama serve exited: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready in %s\n%s", emutest.Scale(30*time.Second), stderr.String())
		}
	}
	resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"Hello."}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("speech: %v %v", err, resp)
	}
	resp.Body.Close()

	// A second serve that does not see the first would serve until stopped:
	// it gets a deadline, then SIGTERM (it stops its engine), then SIGKILL.
	ctx, cancel := context.WithTimeout(context.Background(), emutest.Scale(30*time.Second))
	defer cancel()
	second := exec.CommandContext(ctx, filepath.Join(bin, "drama"), "serve", "--engine-bin", filepath.Join(bin, "tensorfold-standin"), "--addr", freeAddr(t), "--plugin-dir", bin)
	second.Env = cmd.Env
	second.Cancel = func() error { return second.Process.Signal(syscall.SIGTERM) }
	second.WaitDelay = emutest.Scale(15 * time.Second)
	out, err := second.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("a second serve on the root still ran after %s: it did not see the first\n%s", emutest.Scale(30*time.Second), out)
	}
	var x *exec.ExitError
	want := fmt.Sprintf("drama: drama serve (pid %d, %s, variant full", cmd.Process.Pid, url)
	if !errors.As(err, &x) || x.ExitCode() != 1 || !strings.Contains(string(out), want) || strings.Contains(string(out), "runtime directory") {
		t.Errorf("second serve: %v\n%s\nwant exit 1 naming %q", err, out, want)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Fatalf("drama serve after SIGTERM: %v\n%s", err, stderr.String())
	}
	if recs, _ := filepath.Glob(filepath.Join(root, "run", "serve-*.json")); len(recs) != 0 {
		t.Errorf("records left after the stop: %v", recs)
	}

	access, phases := 0, map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not one NDJSON stream: %q\n%s", line, stderr.String())
		}
		switch m["source"] {
		case "access":
			if m["path"] == "/v1/audio/speech" {
				access++
				for _, k := range []string{"id", "voice", "format", "status", "queue_wait_ms", "first_audio_ms", "rtf", "bytes"} {
					if _, ok := m[k]; !ok {
						t.Errorf("access line %q: no %s", line, k)
					}
				}
			}
		case "engine":
			if m["phase"] != "loading" {
				phases[fmt.Sprint(m["phase"])]++
			}
		case "drama", "plugin":
		default:
			t.Errorf("line without a known source: %q", line)
		}
		if _, ok := m["@message"]; ok {
			t.Errorf("a plugin line not carried into the stream: %q", line)
		}
	}
	if access != 1 {
		t.Errorf("want one access line for the one speech request, got %d\n%s", access, stderr.String())
	}
	if phases["ready"] != 1 || phases["spawned"] != 1 {
		t.Errorf("each lifecycle event once, got %v\n%s", phases, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "per mille") || strings.Contains(s, "p/s") {
		t.Errorf("progress bar text in the log:\n%s", s)
	}
}
