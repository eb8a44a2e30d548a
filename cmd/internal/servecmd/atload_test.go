package servecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/drama-tts/drama/pins/hub"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/qualify"
	"github.com/drama-tts/drama/pins"
)

// installedRoot makes a root whose full variant is two small files with
// locked pins naming the built-in repository, and an engine record.
func installedRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "full")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(root, "engine"), 0o755)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model":"test"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "codec.pth"), []byte(strings.Repeat("codec", 200)), 0o644)
	base, err := pins.Builtin("full")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pins.Make(context.Background(), dir, *base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteFile(filepath.Join(dir, pins.LockFileName)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), []byte(strings.Repeat("ab", 32)+"  tensorfold-native\n"), 0o644)
	return root
}

func bufLogger() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

// TestVerifyRefusesAMismatch: a file of the wrong size, or of the right
// size with other bytes under --verify sha256, refuses the start with exit
// 3 and the fetch that repairs it, with the user's --root; --verify none
// lets it through; an unchanged install passes, sha256 from the record the
// second time.
func TestVerifyRefusesAMismatch(t *testing.T) {
	root := installedRoot(t)
	ctx := context.Background()
	for _, level := range []string{"size", "sha256"} {
		logger, log := bufLogger()
		if err := verifyInstall(ctx, serveOptions(t, root, "--verify "+level), root, logger); err != nil {
			t.Fatalf("%s on an intact install: %v", level, err)
		}
		if !strings.Contains(log.String(), "match the pins") {
			t.Fatalf("%s: log %s", level, log)
		}
	}
	logger, log := bufLogger()
	if err := verifyInstall(ctx, serveOptions(t, root, "--verify sha256"), root, logger); err != nil || !strings.Contains(log.String(), "sha256_from_record=2") {
		t.Fatalf("sha256 again: %v; log %s", err, log)
	}

	codec := filepath.Join(root, "full", "codec.pth")
	os.WriteFile(codec, []byte(strings.Repeat("CODEC", 200)), 0o644) // same size, other bytes
	later := time.Now().Add(time.Minute)                             // a changed mtime, whatever the clock's grain
	os.Chtimes(codec, later, later)
	logger, _ = bufLogger()
	if err := verifyInstall(ctx, serveOptions(t, root, ""), root, logger); err != nil {
		t.Fatalf("size check of a same-size file: %v", err)
	}
	err := verifyInstall(ctx, serveOptions(t, root, "--verify sha256"), root, logger)
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !strings.Contains(err.Error(), "codec.pth: sha256 want ") ||
		!strings.Contains(err.Error(), "the engine was not started") || !strings.Contains(err.Error(), "drama fetch --variant full --root "+root) {
		t.Fatalf("sha256 mismatch: exit %d: %v", cmdutil.ExitCode(err), err)
	}
	os.WriteFile(codec, []byte("short"), 0o644)
	err = verifyInstall(ctx, serveOptions(t, root, ""), root, logger)
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !strings.Contains(err.Error(), "codec.pth: size want 1000, got 5") ||
		!strings.Contains(err.Error(), "drama fetch --variant full --root "+root) || !strings.Contains(err.Error(), "drama verify --variant full --level size --root "+root) {
		t.Fatalf("size mismatch: exit %d: %v", cmdutil.ExitCode(err), err)
	}
	if err := verifyInstall(ctx, serveOptions(t, root, "--verify none"), root, logger); err != nil {
		t.Fatalf("--verify none: %v", err)
	}
}

// TestVerifyUnlockedPins: pins without digests are warned about at the
// default size check, and refused when sha256 is asked for.
func TestVerifyUnlockedPins(t *testing.T) {
	root := installedRoot(t)
	os.Remove(filepath.Join(root, "full", pins.LockFileName)) // the built-in pins then
	logger, log := bufLogger()
	if err := verifyInstall(context.Background(), serveOptions(t, root, ""), root, logger); err != nil || !strings.Contains(log.String(), "carry no digests") {
		t.Fatalf("size: %v; log %s", err, log)
	}
	err := verifyInstall(context.Background(), serveOptions(t, root, "--verify sha256"), root, logger)
	if err == nil || !strings.Contains(err.Error(), "drama pins lock --variant full --root "+root) {
		t.Fatalf("sha256: %v", err)
	}
}

// TestEngineSettingsFromFlags: the long-form and prefix-cache flags become
// the start request's parameters and environment (the native engine turns
// them into the server's flags: see engine/native).
func TestEngineSettingsFromFlags(t *testing.T) {
	root := installedRoot(t)
	opts := serveOptions(t, root, "--engine-bin /bin/true --allow-engine-mismatch")
	req, err := startRequest(opts.F, opts, root)
	if err != nil {
		t.Fatal(err)
	}
	if req.Params != nil || strings.Join(req.Env, " ") != "DRAMA_PREFIX_CACHE=2" {
		t.Fatalf("defaults: params %v env %v", req.Params, req.Env)
	}
	opts = serveOptions(t, root, "--engine-bin /bin/true --long-form --long-form-chars 320 --long-form-history 0 --prefix-cache 0")
	if req, err = startRequest(opts.F, opts, root); err != nil {
		t.Fatal(err)
	}
	if req.Params[native.ParamLongFormChars] != "320" || req.Params[native.ParamLongFormHistory] != "0" || strings.Join(req.Env, " ") != "DRAMA_PREFIX_CACHE=0" {
		t.Fatalf("set: params %v env %v", req.Params, req.Env)
	}
	cmdtest.CheckFlags(t, NewCmd, refused(map[string]string{
		"--verify all":           `--verify "all": want size, sha256 or none`,
		"--long-form-chars 0":    "--long-form-chars must be 1 or more",
		"--long-form-history -1": "--long-form-history must be 0 or more",
		"--prefix-cache -2":      "--prefix-cache must be 0 (off) or more",
	}))
}

// TestQualificationServed: drama serve's qualification source reads the
// marker at each request: none, then one bound to this host, then one of
// another engine binary; GET /v1/models says so and --require-qualified
// answers speech 503 with the qualify command carrying the user's flags.
func TestQualificationServed(t *testing.T) {
	root := installedRoot(t)
	opts := serveOptions(t, root, "--require-qualified --engine-bin /bin/true --allow-engine-mismatch")
	opts.Given = []string{"--root", root, "--require-qualified", "true", "--engine-bin", "/bin/true"}
	req, err := startRequest(opts.F, opts, root)
	if err != nil {
		t.Fatal(err)
	}
	q := newQualification(context.Background(), opts, req)
	opts.qualification = q
	hint := "drama qualify --variant full --engine-bin /bin/true --accept-native-numerics --root " + root
	if st, reason := q.Check(); st.State != "unqualified" || st.Hint != hint || st.Detail != "no qualification marker" || !strings.Contains(reason, "no qualification marker") {
		t.Fatalf("no marker: %+v (%s)", st, reason)
	}

	fake, sup := supervisedFake(0)
	_, api, addr := serveOver(t, opts, sup, t.TempDir(), engine.Install{})
	api.SetCapabilities(fake.Desc.Capabilities)

	var intelligibility string
	var wer *float64
	models := func() (bool, string) {
		t.Helper()
		status, _, body := rawRequest(t, addr, "GET /v1/models/drama-3-full", "", nil)
		var m struct {
			Qualified       bool     `json:"qualified"`
			Qualification   string   `json:"qualification"`
			Intelligibility string   `json:"intelligibility"`
			WER             *float64 `json:"wer"`
		}
		if !strings.HasSuffix(status, " 200 OK") || json.Unmarshal(body, &m) != nil {
			t.Fatalf("GET /v1/models/drama-3-full: %s %s", status, body)
		}
		intelligibility, wer = m.Intelligibility, m.WER
		return m.Qualified, m.Qualification
	}
	speechStatus := func() (string, string) {
		t.Helper()
		status, _, body := rawRequest(t, addr, "POST /v1/audio/speech", `{"input":"Hello.","stream":false}`, nil)
		return status, string(body)
	}
	if ok, state := models(); ok || state != "unqualified" {
		t.Fatalf("no marker: qualified %v %s", ok, state)
	}
	if status, body := speechStatus(); !strings.HasSuffix(status, " 503 Service Unavailable") ||
		!strings.Contains(body, "not qualified on this host: run "+hint+" (no qualification marker)") {
		t.Fatalf("no marker: %s %s", status, body)
	}

	rate := 0.0131
	m := &qualify.Marker{Qualified: true, Variant: "full", Host: q.Want.Host, PinsSHA256: q.Want.PinsSHA256, NativeSHA256: q.Want.NativeSHA256,
		Numerics: qualify.Numerics{Accepted: true, Statement: qualify.NumericsStatement, AcceptedAt: time.Now()}, QualifiedAt: time.Now(),
		Intelligibility: qualify.Intelligibility{Checked: true, WER: &rate, Words: 229, Errors: 3, GateWER: qualify.DefaultWER, Summary: "word error rate 1.31 %"}}
	if err := qualify.Write(root, m); err != nil {
		t.Fatal(err)
	}
	if ok, state := models(); !ok || state != "qualified" {
		t.Fatalf("marker: qualified %v %s", ok, state)
	}
	// the marker's word error rate is served while qualified
	if wer == nil || *wer != rate || intelligibility != m.Intelligibility.Short() {
		t.Errorf("a marker with a word error rate of %v: GET /v1/models gives intelligibility %q wer %v", rate, intelligibility, wer)
	}
	if status, body := speechStatus(); !strings.HasSuffix(status, " 200 OK") {
		t.Fatalf("qualified: %s %s", status, body)
	}

	m.NativeSHA256 = strings.Repeat("cd", 32) // made with another engine binary
	if err := qualify.Write(root, m); err != nil {
		t.Fatal(err)
	}
	if ok, state := models(); ok || state != "stale" {
		t.Fatalf("stale marker: qualified %v %s", ok, state)
	}
	if status, body := speechStatus(); !strings.HasSuffix(status, " 503 Service Unavailable") ||
		!strings.Contains(body, "its marker is stale: it was made for another engine binary") {
		t.Fatalf("stale marker: %s %s", status, body)
	}
}

// TestGPULock: a --gpu-lock another job holds is waited for at most
// --gpu-lock-wait, and the error names the holder; once free it is taken
// and held until released.
func TestGPULock(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "gpu.lock")
	other, err := hub.Flock(context.Background(), lock, 0) // another GPU job
	if err != nil {
		t.Fatal(err)
	}
	opts := serveOptions(t, t.TempDir(), "--gpu-lock "+lock+" --gpu-lock-wait 200ms")
	logger, _ := bufLogger()
	_, err = takeGPULock(context.Background(), opts, logger)
	if err == nil || !strings.Contains(err.Error(), "is held by pid "+strconv.Itoa(os.Getpid())) || strings.Contains(err.Error(), "fetch") || !strings.Contains(err.Error(), "--gpu-lock-wait") {
		t.Fatalf("held elsewhere: %v", err)
	}
	other()
	unlock, err := takeGPULock(context.Background(), opts, logger)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Flock(context.Background(), lock, 0); !errors.Is(err, hub.ErrFlockHeld) {
		t.Fatalf("while drama serve holds it, another job got it: %v", err)
	}
	unlock()
	again, err := hub.Flock(context.Background(), lock, 0)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
	if unlock, err := takeGPULock(context.Background(), serveOptions(t, t.TempDir(), ""), logger); err != nil {
		t.Fatal(err)
	} else {
		unlock()
	}
}
