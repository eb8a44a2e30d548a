package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/native/standin"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

// qualifyRoot makes a root whose full variant is two small files with
// locked pins, and whose engine record names the stand-in.
func qualifyRoot(t *testing.T) (root, corpus string) {
	t.Helper()
	bin := binaries(t)
	root = t.TempDir()
	os.MkdirAll(filepath.Join(root, "full"), 0o755)
	os.MkdirAll(filepath.Join(root, "engine"), 0o755)
	os.WriteFile(filepath.Join(root, "full", "config.json"), []byte(`{"model":"test"}`), 0o644)
	os.WriteFile(filepath.Join(root, "full", "codec.pth"), []byte(strings.Repeat("codec", 200)), 0o644)
	if out, err := exec.Command(filepath.Join(bin, "drama"), "pins", "make", filepath.Join(root, "full"), "--local",
		"-o", filepath.Join(root, "full", "pins.lock.json")).CombinedOutput(); err != nil {
		t.Fatalf("pins make: %v\n%s", err, out)
	}
	setRecord(t, root, filepath.Join(bin, "tensorfold-standin"))
	corpus = filepath.Join(t.TempDir(), "corpus.txt")
	os.WriteFile(corpus, []byte("Hi.\n[laughs] Oh.\n"), 0o644)
	return root, corpus
}

func setRecord(t *testing.T, root, binary string) {
	t.Helper()
	out, err := exec.Command("sha256sum", binary).Output()
	if err != nil {
		t.Fatalf("sha256sum: %v", err)
	}
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), out, 0o644)
}

// drama runs the drama binary with the stand-in paced at rtf and returns
// its exit code and output.
func drama(t *testing.T, rtf string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binaries(t), "drama"), args...)
	cmd.Env = append(os.Environ(), "TENSORFOLD_STANDIN_LOAD_TIME=50ms", "TENSORFOLD_STANDIN_RTF="+rtf)
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

func TestQualify(t *testing.T) {
	root, corpus := qualifyRoot(t)
	bin := binaries(t)
	marker := filepath.Join(root, ".drama", "qualified-full.json")
	// Other jobs on a shared test machine move MemAvailable by more than
	// the 2 GiB default; the threshold itself is tested in engine/qualify.
	args := []string{"qualify", "--root", root, "--engine-bin", filepath.Join(bin, "tensorfold-standin"), "--plugin-dir", bin,
		"--corpus", corpus, "--warmup", "0", "--passes", "2", "--mem-tolerance-gib", "8"}
	serve := []string{"--", "--admission", "off", "--grace", "3s"}

	code, out := drama(t, "0.02", append(append(args, "--accept-native-numerics", "--gate-rtf", "0.01"), serve...)...)
	if code != 1 || !strings.Contains(out, "warm whole RTF p50 0.") || !strings.Contains(out, "is not under 0.010") {
		t.Fatalf("gate 0.01: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a marker was written for a failed run")
	}

	code, out = drama(t, "0.02", append(args, serve...)...)
	if code != 1 || !strings.Contains(out, "--accept-native-numerics") || strings.Contains(out, "FAIL") {
		t.Fatalf("without acceptance: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a marker was written without --accept-native-numerics")
	}

	voices := t.TempDir()
	fixture, err := os.ReadFile(filepath.Join("..", "..", "voices", "testdata", "cuda.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(voices, "fixture.json"), fixture, 0o644)
	// with DRAMA_API_KEY set, the drama serve qualify starts requires the
	// key and the run sends it
	t.Setenv("DRAMA_API_KEY", "dk-qualify-test-0123456789abcdef")
	code, out = drama(t, "0.02", append(append(args, "--accept-native-numerics", "--references", filepath.Join(voices, "fixture.json")), append(serve, "--voices", voices)...)...)
	if code != 0 || !strings.Contains(out, "full is qualified on this host") {
		t.Fatalf("qualify: exit %d\n%s", code, out)
	}
	for _, step := range []string{"pinned files", "engine binary", "cold load", "sentence warm, byte-identical", "sentence streamed, same samples",
		"300-character paragraph", "voice fixture", "inline references (2 from fixture.json)", "unknown voice refused", "stopped", "first audio", "rtf whole", "rtf streamed", "memory"} {
		if !strings.Contains(out, "\t"+step) {
			t.Errorf("no step %q in\n%s", step, out)
		}
	}
	var m map[string]any
	data, err := os.ReadFile(marker)
	if err != nil || json.Unmarshal(data, &m) != nil {
		t.Fatalf("marker: %v\n%s", err, data)
	}
	for _, k := range []string{"qualified", "host", "gpu", "pins_sha256", "native_sha256", "checkpoint_revision", "numerics", "bench", "qualified_at", "intelligibility"} {
		if _, ok := m[k]; !ok {
			t.Errorf("marker lacks %q", k)
		}
	}
	if in, _ := m["intelligibility"].(map[string]any); in["checked"] != false || !strings.HasPrefix(fmt.Sprint(in["summary"]), "intelligibility not checked") ||
		!strings.Contains(out, "full is qualified on this host (intelligibility not checked)") {
		t.Errorf("without a transcriber: %v\n%s", in, out)
	}
	if left := processesRunning(t, bin); len(left) > 0 {
		t.Fatalf("processes left after qualify: %q", left)
	}
	if code, out := drama(t, "0", "verify", "--root", root); code != 0 || strings.Contains(out, "not pinned") {
		t.Fatalf("verify counts the marker: exit %d\n%s", code, out)
	}
	if code, out := drama(t, "0", "qualify", "--check", "--root", root); code != 0 || !strings.HasPrefix(out, "full\tqualified") {
		t.Fatalf("check: exit %d\n%s", code, out)
	}

	// A rebuilt engine: its record changes, the marker goes stale.
	setRecord(t, root, filepath.Join(bin, "drama-engine-cuda"))
	if code, out := drama(t, "0", "qualify", "--check", "--root", root); code != 1 || !strings.Contains(out, "stale") || !strings.Contains(out, "engine binary") {
		t.Fatalf("check after the record changed: exit %d\n%s", code, out)
	}
}

func TestBenchStartsServe(t *testing.T) {
	bin := binaries(t)
	root, corpus := qualifyRoot(t)
	out := t.TempDir()
	voices := t.TempDir()
	fixture, err := os.ReadFile(filepath.Join("..", "..", "voices", "testdata", "cuda.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(voices, "fixture.json"), fixture, 0o644)
	// with DRAMA_API_KEY set, the drama serve bench starts requires the key
	// and the run sends it
	t.Setenv("DRAMA_API_KEY", "dk-bench-test-0123456789abcdef")
	code, msg := drama(t, "0.05", "bench", "--root", root, "--start", "--corpus", corpus, "--warmup", "0", "--passes", "1", "--out", out,
		"--voice", "", "--voice", "fixture",
		"--", "--plugin-dir", bin, "--engine-bin", filepath.Join(bin, "tensorfold-standin"), "--admission", "off", "--grace", "3s", "--voices", voices)
	if code != 0 || !strings.Contains(msg, "streamed\tall\tfirst_audio_s") || !strings.Contains(msg, "streamed\tvoice fixture\trtf") {
		t.Fatalf("drama bench --start: exit %d\n%s", code, msg)
	}
	var rep struct {
		ReadySeconds float64 `json:"ready_s"`
		Memory       struct {
			Baseline struct {
				BeforeLoad bool `json:"before_load"`
			} `json:"baseline"`
			Peak struct {
				RSS int64 `json:"rss"`
			} `json:"peak"`
			PIDs []int `json:"pids"`
		} `json:"memory"`
	}
	data, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.ReadySeconds <= 0 || !rep.Memory.Baseline.BeforeLoad || rep.Memory.Peak.RSS <= 0 || len(rep.Memory.PIDs) < 3 {
		t.Fatalf("report: ready %g, before load %v, RSS %d, pids %v", rep.ReadySeconds, rep.Memory.Baseline.BeforeLoad, rep.Memory.Peak.RSS, rep.Memory.PIDs)
	}
	if left := processesRunning(t, bin); len(left) > 0 {
		t.Fatalf("processes left after drama bench: %q", left)
	}
}

func TestBenchInterruptedStopsItsServe(t *testing.T) {
	bin := binaries(t)
	root, _ := qualifyRoot(t)
	cmd := exec.Command(filepath.Join(bin, "drama"), "bench", "--root", root, "--start", "--out", t.TempDir(),
		"--", "--plugin-dir", bin, "--engine-bin", filepath.Join(bin, "tensorfold-standin"), "--admission", "off", "--grace", "3s")
	cmd.Env = append(os.Environ(), "TENSORFOLD_STANDIN_LOAD_TIME=50ms", "TENSORFOLD_STANDIN_RTF=0.5")
	stderr := &enginetest.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !enginetest.Within(30*time.Second, func() bool { return strings.Contains(stderr.String(), "drama serve ready at") }) {
		cmd.Process.Kill()
		t.Fatalf("drama serve not ready:\n%s", stderr)
	}
	if running := processesRunning(t, bin); len(running) < 4 {
		t.Fatalf("want drama bench, drama serve, its plugin and the stand-in, found %q", running)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v) after SIGINT\n%s", code, err, stderr)
	}
	var left []string
	if !enginetest.Within(5*time.Second, func() bool { left = processesRunning(t, bin); return len(left) == 0 }) {
		t.Fatalf("processes left after an interrupted bench: %q", left)
	}
}

// With --transcribe-url, qualify gates on the word error rate: an engine
// build that speaks well-formed noise in real time passes every other
// check and fails this one, naming the figure; a good one passes with the
// figure in the marker. Without a transcriber the marker says the words
// were not checked (TestQualify's run).
func TestQualifyWER(t *testing.T) {
	root, _ := qualifyRoot(t)
	bin := binaries(t)
	ts := transcribetest.New()
	defer ts.Close()
	ts.Text = transcribetest.Hear(standin.SpokenText)
	corpus := filepath.Join(t.TempDir(), "corpus.txt")
	os.WriteFile(corpus, []byte("[laughs] Well, here we are again.\nThe kettle is already on, and it's 1,000 degrees!\n"), 0o644)
	marker := filepath.Join(root, ".drama", "qualified-full.json")
	args := []string{"qualify", "--root", root, "--engine-bin", filepath.Join(bin, "tensorfold-standin"), "--plugin-dir", bin,
		"--corpus", corpus, "--warmup", "0", "--passes", "2", "--mem-tolerance-gib", "8", "--transcribe-url", ts.URL, "--accept-native-numerics",
		"--", "--admission", "off", "--grace", "3s"}

	t.Setenv("TENSORFOLD_STANDIN_FAULT", "noise")
	code, out := drama(t, "0.02", args...)
	if code != 1 || !strings.Contains(out, "bench\tword error rate\tFAIL\tthe warm whole replies' word error rate 100.00 % (28 errors in 28 words of 4 replies") ||
		!strings.Contains(out, "is over the gate 5.00 %") || strings.Count(out, "\tFAIL\t") != 1 {
		t.Fatalf("noise: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a marker was written for an engine that speaks noise")
	}

	t.Setenv("TENSORFOLD_STANDIN_FAULT", "")
	code, out = drama(t, "0.02", args...)
	if code != 0 || !strings.Contains(out, "bench\tword error rate\tpass\tthe warm whole replies' word error rate 0.00 % (0 errors in 28 words of 4 replies") ||
		!strings.Contains(out, "full is qualified on this host (word error rate 0.00 %)") {
		t.Fatalf("good: exit %d\n%s", code, out)
	}
	var m struct {
		Intelligibility struct {
			Checked     bool     `json:"checked"`
			WER         *float64 `json:"wer"`
			Words       int      `json:"words"`
			GateWER     float64  `json:"gate_wer"`
			Transcriber string   `json:"transcriber"`
		} `json:"intelligibility"`
	}
	data, _ := os.ReadFile(marker)
	if err := json.Unmarshal(data, &m); err != nil || !m.Intelligibility.Checked || m.Intelligibility.WER == nil || *m.Intelligibility.WER != 0 ||
		m.Intelligibility.Words != 28 || m.Intelligibility.GateWER != 0.05 || m.Intelligibility.Transcriber != ts.URL+"/v1/audio/transcriptions" {
		t.Fatalf("marker: %v\n%s", err, data)
	}
	if code, out := drama(t, "0", "list", "--root", root); code != 0 || !strings.Contains(out, "(word error rate 0.00 %)") {
		t.Fatalf("drama list: exit %d\n%s", code, out)
	}
}
