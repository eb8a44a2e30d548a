package qualifycmd

import (
	"context"
	"os"
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
	if err := runCheck(); cmdutil.ExitCode(err) != 1 || !strings.Contains(out(), "full\tunqualified\tno qualification marker: run drama qualify --variant full --root "+root+"\n") {
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
	} else if o := out(); !strings.Contains(o, "full\tstale\tengine binary") || !strings.HasSuffix(o, ": run drama qualify --variant full --root "+root+" again\n") {
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
