package qualifycmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine/qualify"
	"github.com/drama-tts/drama/pins"
)

func TestFlags(t *testing.T) {
	cmdtest.CheckFlags(t, NewCmd, []cmdtest.FlagCase[Options]{
		{Args: []string{"--engine", "cuda"}, Check: func(o *Options) bool {
			return o.GateFirstAudio == 0.5 && o.GateRTF == 1 && o.Passes == 3 && o.Warmup == 2 && !o.Accept && o.MemTolerance == 2
		}},
		{Args: []string{"--engine", "metal"}, Check: func(o *Options) bool { return o.GateFirstAudio == 0.55 }},
		{Args: []string{"--engine", "metal", "--gate-first-audio", "0.7"}, Check: func(o *Options) bool { return o.GateFirstAudio == 0.7 }},
		{Args: []string{"--", "--admission", "off"}, Check: func(o *Options) bool { return strings.Join(o.ServeArgs, " ") == "--admission off" }},
		{Args: []string{"--gate-rtf", "0"}, WantErr: "--gate-rtf"},
		{Check: func(o *Options) bool { return o.GateWER == 5 && o.TranscribeURL == "" }},
		{Args: []string{"--transcribe-url", "http://127.0.0.1:8080", "--gate-wer", "2.5"}, Check: func(o *Options) bool {
			return o.GateWER == 2.5 && o.TranscribeURL == "http://127.0.0.1:8080"
		}},
		{Args: []string{"--gate-wer", "3"}, WantErr: "--gate-wer needs --transcribe-url"},
		{Args: []string{"--transcribe-url", "http://h:1", "--gate-wer", "0"}, WantErr: "--gate-wer must be a percentage"},
		{Args: []string{"--transcribe-url", "h:1"}, WantErr: "--transcribe-url"},
		{Args: []string{"--passes", "0"}, WantErr: "--passes"},
		{Args: []string{"stray"}, WantErr: "unexpected argument"},
	})
}

// checkRoot makes a root with locked pins for full and an engine record.
func checkRoot(t *testing.T) (string, *cmdutil.Factory, func() string) {
	t.Helper()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "full"), 0o755)
	os.MkdirAll(filepath.Join(root, "engine"), 0o755)
	os.WriteFile(filepath.Join(root, "full", "config.json"), []byte("{}"), 0o644)
	p, err := pins.Make(context.Background(), filepath.Join(root, "full"), pins.Pins{Variant: "full", Engine: "cuda"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteFile(filepath.Join(root, "full", pins.LockFileName)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), []byte(strings.Repeat("ab", 32)+"  tensorfold-native\n"), 0o644)
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "DRAMA_HOME", root)
	return root, f, func() string { s := out.String(); out.Reset(); return s }
}

func TestCheck(t *testing.T) {
	root, f, out := checkRoot(t)
	f.Global.Root = root
	runCheck := func() error { return cmdtest.Execute(NewCmd(f, nil), "--check") }
	if err := runCheck(); cmdutil.ExitCode(err) != 1 || !strings.Contains(out(), "full\tunqualified\tno qualification marker: run drama qualify --variant full --accept-native-numerics --root "+root+"\n") {
		t.Fatalf("no marker: %v", err)
	}
	b, _, err := cmdutil.CurrentBinding(f, "", false)
	if err != nil {
		t.Fatal(err)
	}
	m := &qualify.Marker{Qualified: true, Variant: "full", Host: b.Host, PinsSHA256: b.PinsSHA256, NativeSHA256: b.NativeSHA256,
		Numerics: qualify.Numerics{Accepted: true, Statement: qualify.NumericsStatement, AcceptedAt: time.Now()}, QualifiedAt: time.Now()}
	if err := qualify.Write(root, m); err != nil {
		t.Fatal(err)
	}
	if err := runCheck(); err != nil || !strings.HasPrefix(out(), "full\tqualified") {
		t.Fatalf("marker: %v", err)
	}
	// A changed engine record makes the marker stale.
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), []byte(strings.Repeat("cd", 32)+"  tensorfold-native\n"), 0o644)
	if err := runCheck(); cmdutil.ExitCode(err) != 1 {
		t.Fatalf("record changed: %v", err)
	} else if o := out(); !strings.Contains(o, "full\tstale\tengine binary") || !strings.HasSuffix(o, ": run drama qualify --variant full --accept-native-numerics --root "+root+" again\n") {
		t.Fatalf("record changed: %q", o)
	}
}

func TestAssetsFailStopTheRun(t *testing.T) {
	root, f, out := checkRoot(t)
	os.WriteFile(filepath.Join(root, "full", "config.json"), []byte("{ }"), 0o644) // same size, other bytes
	err := cmdtest.Execute(NewCmd(f, nil), "--engine-bin", filepath.Join(root, "full", "config.json"), "--accept-native-numerics")
	o := out()
	if cmdutil.ExitCode(err) != 1 || !strings.Contains(o, "assets\tpinned files\tFAIL\t1 of 1 files do not match") ||
		!strings.Contains(o, "assets\tengine binary\tFAIL") || strings.Contains(o, "e2e") {
		t.Fatalf("%v\n%s", err, o)
	}
	if _, err := os.Stat(qualify.Path(root, "full")); err == nil {
		t.Fatal("a marker was written")
	}
}

// The advice for a binary with no record runs as printed, on a root with
// no engine folder yet, and the next run finds the record.
func TestEngineRecordAdviceRunsAsPrinted(t *testing.T) {
	root, f, out := checkRoot(t)
	os.RemoveAll(filepath.Join(root, "engine"))
	os.WriteFile(filepath.Join(root, "full", "config.json"), []byte("{ }"), 0o644) // the pinned files fail: no e2e
	bin := filepath.Join(t.TempDir(), "my engine")
	os.WriteFile(bin, []byte("engine"), 0o755)
	err := cmdtest.Execute(NewCmd(f, nil), "--engine-bin", bin, "--accept-native-numerics")
	o := out()
	rec := filepath.Join(root, "engine", "engine.sha256")
	want := "no record of the engine binary: write it with `mkdir -p " + filepath.Join(root, "engine") + " && sha256sum '" + bin + "' > " + rec + "`"
	if cmdutil.ExitCode(err) != 1 || !strings.Contains(o, want) {
		t.Fatalf("%v\n%s\nwant %s", err, o, want)
	}
	line := want[strings.Index(want, "`")+1 : len(want)-1]
	if b, err := exec.Command("sh", "-c", line).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, b)
	}
	err = cmdtest.Execute(NewCmd(f, nil), "--engine-bin", bin, "--accept-native-numerics")
	if o := out(); !strings.Contains(o, "assets\tengine binary\tpass\t"+bin+" matches its record") {
		t.Fatalf("after the advice: %v\n%s", err, o)
	}
}

// On a root where the variant is not installed, the pinned files' advice
// is the fetch that installs it, with the root and its size.
func TestAssetsOfAVariantNotInstalled(t *testing.T) {
	ios, _, outBuf, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root = t.TempDir()
	bin := filepath.Join(t.TempDir(), "engine")
	os.WriteFile(bin, []byte("engine"), 0o755)
	err := cmdtest.Execute(NewCmd(f, nil), "--engine-bin", bin, "--accept-native-numerics")
	o := outBuf.String()
	want := "assets\tpinned files\tFAIL\tfull is not installed in " + f.Global.Root + ": run drama fetch --variant full --root " + f.Global.Root + " (38.6 GiB) first: it writes the complete pins"
	if cmdutil.ExitCode(err) != 1 || !strings.Contains(o, want) {
		t.Fatalf("%v\n%s\nwant %s", err, o, want)
	}
}

// drama qualify --check's advice is a qualification that writes the
// marker: --accept-native-numerics, and the engine flags given.
func TestCheckAdviceWritesTheMarker(t *testing.T) {
	root, f, out := checkRoot(t)
	f.Global.Root = root
	err := cmdtest.Execute(NewCmd(f, nil), "--check", "--engine-bin", "bin/tensorfold-standin")
	want := "full\tunqualified\tno qualification marker: run drama qualify --variant full --engine-bin bin/tensorfold-standin --accept-native-numerics --root " + root + "\n"
	if o := out(); cmdutil.ExitCode(err) != 1 || o != want {
		t.Fatalf("%v\n%q\nwant %q", err, o, want)
	}
}
