package upcmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/pins"
)

// fakeServe stands for drama serve's flags that drama up reads.
func fakeServe() *cobra.Command {
	cmd := &cobra.Command{Use: "serve", RunE: func(*cobra.Command, []string) error { return nil }}
	fl := cmd.Flags()
	for _, name := range []string{"engine-bin", "plugin-dir", "addr", "api-key-file", "admission"} {
		fl.String(name, "", "")
	}
	fl.String("engine", "cuda", "")
	fl.Bool("require-qualified", false, "")
	fl.Duration("ready-timeout", time.Minute, "")
	return cmd
}

// TestMain puts a fake nvidia-smi naming a GPU on the PATH, for the whole
// run: the GPU's name is looked up once a process.
func TestMain(m *testing.M) {
	fake, err := os.MkdirTemp("", "upcmd-nvidia-smi-")
	if err != nil {
		panic(err)
	}
	os.WriteFile(filepath.Join(fake, "nvidia-smi"), []byte("#!/bin/sh\necho 'NVIDIA Test GPU'\n"), 0o755)
	os.Setenv("PATH", fake+":"+os.Getenv("PATH"))
	code := m.Run()
	os.RemoveAll(fake)
	os.Exit(code)
}

// finishedRoot is a root whose variant is fetched and verified, with the
// licence accepted and an engine binary to give drama serve, and the pins
// file.
func finishedRoot(t *testing.T) (root, pinsFile, engineBin string) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, "full")
	os.MkdirAll(dir, 0o755)
	data := []byte("weights")
	os.WriteFile(filepath.Join(dir, "model.safetensors"), data, 0o644)
	sum := sha256.Sum256(data)
	p := &pins.Pins{Format: pins.Format, Variant: "full", Repo: "test/up", RepoType: "model", Revision: strings.Repeat("c", 40),
		License: "Test Licence", Engine: "cuda", Files: []pins.File{{Path: "model.safetensors", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}}}
	pinsFile = filepath.Join(t.TempDir(), "pins.json")
	if err := p.WriteFile(pinsFile); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteFile(filepath.Join(dir, pins.LockFileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := pins.Verify(context.Background(), dir, p, pins.VerifyOptions{Level: pins.LevelSHA256}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, pins.StateDirName), 0o755)
	os.WriteFile(filepath.Join(root, pins.StateDirName, "license-acceptance.json"),
		[]byte(`[{"license": "Test Licence", "repo": "test/up", "revision": "x", "user": "ops", "time": "2026-01-02T03:04:05Z", "how": "flag"}]`), 0o644)
	engineBin = filepath.Join(t.TempDir(), "tensorfold-native")
	os.WriteFile(engineBin, []byte("#!/bin/sh\n"), 0o755)
	return root, pinsFile, engineBin
}

func execUp(ctx context.Context, f *cmdutil.Factory, peers Peers, args ...string) error {
	root := cmdtest.NewRoot(f, NewCmd(f, peers, nil))
	root.SetArgs(append([]string{"up"}, args...))
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	return root.ExecuteContext(ctx)
}

// TestUpDryRunOutputs: --dry-run as a table on a terminal, as TSV piped and
// as one JSON document, each step skipped with its reason on a finished
// root; nothing is run.
func TestUpDryRunOutputs(t *testing.T) {
	root, pinsFile, engineBin := finishedRoot(t)
	ran := 0
	peers := Peers{CheckServe: fakeServe, Run: func(context.Context, ...string) error { ran++; return nil }}
	args := []string{"--root", root, "--pins", pinsFile, "--engine-bin", engineBin, "--admission", "off", "--dry-run"}
	for _, mode := range []string{"tty", "piped", "json"} {
		ios, _, out, errOut := cmdtest.IOStreams()
		ios.SetStdoutTTY(mode == "tty")
		f := cmdtest.Factory(ios)
		a := args
		if mode == "json" {
			a = append(a, "--json")
		}
		if err := execUp(context.Background(), f, peers, a...); err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, errOut)
		}
		switch mode {
		case "tty":
			if !strings.Contains(out.String(), "STEP") || !strings.Contains(out.String(), "verify   skip") {
				t.Errorf("table:\n%s", out)
			}
		case "piped":
			for _, want := range []string{"licence\tskip\t\t\tTest Licence accepted by ops on 2026-01-02",
				"fetch\tskip\t\t\tevery pinned file is in " + filepath.Join(root, "full") + " (1 files, 7 B)",
				"verify\tskip\t\t\tthe verified-state record vouches for every file by sha256",
				"engine\tskip\t\t\tdrama serve finds the engine at " + engineBin, "serve\trun\t"} {
				if !strings.Contains(out.String(), want+"") {
					t.Errorf("TSV: no %q in\n%s", want, out)
				}
			}
		case "json":
			var pl Plan
			if err := json.Unmarshal(out.Bytes(), &pl); err != nil {
				t.Fatalf("JSON: %v\n%s", err, out)
			}
			var steps []string
			for _, s := range pl.Steps {
				steps = append(steps, s.Step+" "+s.Action)
			}
			if want := []string{"licence skip", "fetch skip", "verify skip", "engine skip", "qualify skip", "serve run"}; !slices.Equal(steps, want) || len(pl.Refusals) > 0 {
				t.Errorf("JSON steps %v, want %v; refusals %v", steps, want, pl.Refusals)
			}
		}
	}
	if ran != 0 {
		t.Errorf("--dry-run ran %d commands", ran)
	}
}

// TestUpReadyLineWithAKeyFile: on a finished root drama up runs drama serve
// with the serve flags given, waits for /ready, and with --json reports each
// step and the server as NDJSON; with --api-key-file the drama say line
// gives the file's first key in DRAMA_API_KEY.
func TestUpReadyLineWithAKeyFile(t *testing.T) {
	root, pinsFile, engineBin := finishedRoot(t)
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" {
			http.NotFound(w, r)
		}
	}))
	defer ready.Close()
	addr := strings.TrimPrefix(ready.URL, "http://")
	var served []string
	peers := Peers{CheckServe: fakeServe, Run: func(ctx context.Context, args ...string) error {
		served = args
		if _, err := serverec.Write(root, serverec.Record{PID: os.Getpid(), Addr: addr, Root: root, Variant: "full", Started: time.Now()}); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}}
	keys := filepath.Join(t.TempDir(), "keys.txt")
	ios, _, _, _ := cmdtest.IOStreams()
	out := &enginetest.Buffer{}
	ios.Out = out
	f := cmdtest.Factory(ios)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- execUp(ctx, f, peers, "--root", root, "--pins", pinsFile, "--engine-bin", engineBin, "--admission", "off",
			"--api-key-file", keys, "--json")
	}()
	enginetest.WaitFor(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("drama up ended before it was ready: %v\n%s", err, out)
		default:
		}
		return strings.Contains(out.String(), `"event":"ready"`)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"--root", root, "--variant", "full", "--json", "serve", "--admission", "off", "--api-key-file", keys, "--engine-bin", engineBin}
	if !slices.Equal(served, want) {
		t.Errorf("drama serve run with %q, want %q", served, want)
	}
	var states []string
	var readyEv Event
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not NDJSON: %q: %v", line, err)
		}
		if e.Event == "step" {
			states = append(states, e.Step+" "+e.State)
		}
		if e.Event == "ready" {
			readyEv = e
		}
	}
	wantStates := []string{"licence skipped", "fetch skipped", "verify skipped", "engine skipped", "qualify skipped", "serve start", "serve ready", "serve done"}
	if !slices.Equal(states, wantStates) {
		t.Errorf("steps %q, want %q", states, wantStates)
	}
	wantSay := "DRAMA_API_KEY=$(awk '$1 !~ /^#/ && NF {print $1; exit}' " + keys + ") drama say 'Hello from drama.' --server " + ready.URL + " -o hello.wav"
	if readyEv.URL != ready.URL || readyEv.Page != ready.URL+"/" || readyEv.Say != wantSay {
		t.Errorf("ready event %+v\nwant say %s", readyEv, wantSay)
	}
}

// TestUpWithoutPinsFollowsTheRootsLock: with no --pins, drama up works with
// the variant's lock file in the root, as its help says (and as drama
// verify, qualify and serve do), not with the built-in pins: on a root
// fetched from other pins every step but serve is skipped, and nothing is
// asked of the Hub.
func TestUpWithoutPinsFollowsTheRootsLock(t *testing.T) {
	root, _, engineBin := finishedRoot(t)
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1") // the built-in pins would be listed there, and fail
	peers := Peers{CheckServe: fakeServe, Run: func(context.Context, ...string) error { return nil }}
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	if err := execUp(context.Background(), f, peers, "--root", root, "--variant", "full", "--engine-bin", engineBin, "--admission", "off", "--dry-run", "--json"); err != nil {
		t.Fatalf("drama up --dry-run without --pins: %v\n%s%s", err, out, errOut)
	}
	var pl Plan
	if err := json.Unmarshal(out.Bytes(), &pl); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	var steps []string
	for _, s := range pl.Steps {
		steps = append(steps, s.Step+" "+s.Action)
	}
	if want := []string{"licence skip", "fetch skip", "verify skip", "engine skip", "qualify skip", "serve run"}; !slices.Equal(steps, want) || len(pl.Refusals) > 0 {
		t.Errorf("steps %v, want %v; refusals %v", steps, want, pl.Refusals)
	}
}
