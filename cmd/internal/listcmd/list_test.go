package listcmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine/qualify"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub/hubtest"
)

const (
	commitPruned = "1111111111111111111111111111111111111111"
	commitFull   = "2222222222222222222222222222222222222222"
)

// fixture: nvfp4 and macos share one snapshot, full is hard-linked and
// verified by sha256, an engine binary is recorded, one cloned voice.
func fixture(t *testing.T) (*hubtest.Layout, *cmdutil.Factory, *cmdutil.IOStreams) {
	x := hubtest.New(t)
	shared := map[string]string{"model.safetensors": strings.Repeat("n", 2048), "codec.pth": "codec"}
	x.Install("nvfp4", "o/pruned", commitPruned, false, shared)
	x.Install("macos", "o/pruned", commitPruned, false, shared)
	full := x.Install("full", "o/full", commitFull, true, map[string]string{"model.safetensors": strings.Repeat("f", 4096), "voices/narrator.json": "{}"})
	if rep, err := pins.Verify(context.Background(), full.Dir, full.Pins, pins.VerifyOptions{Level: pins.LevelSHA256}); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	eng := filepath.Join(x.Root, "engine")
	if err := os.MkdirAll(eng, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(eng, "tensorfold-native"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := strings.Repeat("ab", 32)
	if err := os.WriteFile(filepath.Join(eng, "engine.sha256"), []byte(sum+"  tensorfold-native\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "voices", "testdata", "cloned.json"))
	if err != nil {
		t.Skip("no cloned voice fixture:", err)
	}
	if err := os.MkdirAll(filepath.Join(x.Root, "voices"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(x.Root, "voices", "anna.json"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "HF_HUB_CACHE", x.Cache.Dir)
	f.Global.Root = x.Root
	return x, f, ios
}

func TestListPiped(t *testing.T) {
	x, f, ios := fixture(t)
	if err := run(context.Background(), &Options{F: f}); err != nil {
		t.Fatal(err)
	}
	out := ios.Out.(interface{ String() string }).String()
	bin := filepath.Join(x.Root, "engine", "tensorfold-native")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{
		"full\t4.0 KiB\t-\t-\tsha256 ",
		"macos\t2.0 KiB\t2.0 KiB with nvfp4\t-\tsize\t" + bin + " sha256 abababababab\t-\t0\t1",
		"nvfp4\t2.0 KiB\t2.0 KiB with macos\t-\tsize\t" + bin + " sha256 abababababab\t-\t0\t1",
	}
	if len(lines) != 3 || !strings.HasPrefix(lines[0], want[0]) || !strings.HasSuffix(lines[0], "\t"+bin+" sha256 abababababab\t-\t1\t1") || lines[1] != want[1] || lines[2] != want[2] {
		t.Fatalf("piped:\n%s\nwant like:\n%s", out, strings.Join(want, "\n"))
	}
	if strings.Contains(out, "VARIANT") {
		t.Fatal("headers when piped")
	}
}

func TestListTTY(t *testing.T) {
	_, f, ios := fixture(t)
	ios.SetStdoutTTY(true)
	if err := run(context.Background(), &Options{F: f}); err != nil {
		t.Fatal(err)
	}
	out := ios.Out.(interface{ String() string }).String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "VARIANT  SIZE") || strings.Contains(out, "\t") {
		t.Fatalf("tty:\n%s", out)
	}
	// Columns line up: SHARED starts at one offset in every row.
	col := strings.Index(lines[0], "SHARED")
	for _, l := range lines[2:] {
		if !strings.HasPrefix(l[col:], "2.0 KiB with ") {
			t.Fatalf("misaligned row %q", l)
		}
	}
	errOut := ios.ErrOut.(interface{ String() string }).String()
	// 4 KiB + 2 KiB + 5 B: the pruned snapshot counts once.
	if !strings.Contains(errOut, "6.0 KiB on disk in all") || !strings.Contains(errOut, "counted once") {
		t.Fatalf("stderr: %q", errOut)
	}
}

func TestListJSON(t *testing.T) {
	x, f, ios := fixture(t)
	f.Global.JSON = true
	if err := run(context.Background(), &Options{F: f}); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal([]byte(ios.Out.(interface{ String() string }).String()), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Root != x.Root || rep.Bytes != 4096+2+2048+5 || len(rep.Variants) != 3 {
		t.Fatalf("report %+v", rep)
	}
	full, nv := rep.Variants[0], rep.Variants[2]
	if full.Verified.Level != pins.LevelSHA256 || full.Verified.When.IsZero() || full.Voices != 1 || full.ClonedVoices != 1 || full.Qualified != nil {
		t.Fatalf("full %+v", full)
	}
	if nv.Usage.Bytes != 2048+5 || nv.Usage.SharedBytes != 2048+5 || nv.Usage.SharedWith[0] != "macos" || nv.Verified.Level != pins.LevelSize || nv.Engine.SHA256 != strings.Repeat("ab", 32) {
		t.Fatalf("nvfp4 %+v usage %+v", nv, nv.Usage)
	}
}

func TestListShowsWhatTheCacheHolds(t *testing.T) {
	x, f, ios := fixture(t)
	// A user's own hf download of the pruned repository at this commit.
	if err := x.Cache.WriteRef("o/pruned", "main", commitPruned); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(x.Root, "nvfp4", "codec.pth")); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), &Options{F: f}); err != nil {
		t.Fatal(err)
	}
	out := ios.Out.(interface{ String() string }).String()
	if !strings.Contains(out, "nvfp4\t2.0 KiB\t2.0 KiB with macos\t2.0 KiB\t1 missing\t") || !strings.Contains(out, "macos\t2.0 KiB\t2.0 KiB with nvfp4\t2.0 KiB\tsize") {
		t.Fatalf("piped:\n%s", out)
	}
}

func TestListEmptyRoot(t *testing.T) {
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root = t.TempDir()
	if err := run(context.Background(), &Options{F: f}); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || !strings.Contains(errOut.String(), "run drama fetch --variant full --root "+f.Global.Root+" (or --variant nvfp4, macos)") {
		t.Fatalf("out %q err %q", out, errOut)
	}
}

// A passing qualification shows in QUALIFIED and in "qualified"; a marker
// bound to another engine binary shows as stale.
func TestListShowsQualification(t *testing.T) {
	x, f, ios := fixture(t)
	full, err := pins.ReadFile(filepath.Join(x.Root, "full", pins.LockFileName))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := qualify.PinsSHA256(full)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	m := &qualify.Marker{Qualified: true, Variant: "full", Host: qualify.HostID(), PinsSHA256: sum, NativeSHA256: strings.Repeat("ab", 32),
		Numerics: qualify.Numerics{Accepted: true, Statement: qualify.NumericsStatement, AcceptedAt: now}, QualifiedAt: now}
	if err := qualify.Write(x.Root, m); err != nil {
		t.Fatal(err)
	}
	stale := *m
	stale.Variant, stale.NativeSHA256 = "nvfp4", strings.Repeat("cd", 32)
	if err := qualify.Write(x.Root, &stale); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), &Options{F: f}); err != nil {
		t.Fatal(err)
	}
	out := ios.Out.(interface{ String() string }).String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "\tqualified 2026-01-02 03:04 UTC (intelligibility not checked)\t1\t1") ||
		!strings.HasSuffix(lines[1], "\t-\t0\t1") || !strings.HasSuffix(lines[2], "\tstale\t0\t1") {
		t.Fatalf("piped:\n%s", out)
	}
	ios.Out.(interface{ Reset() }).Reset()
	f.Global.JSON = true
	if err := run(context.Background(), &Options{F: f}); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal([]byte(ios.Out.(interface{ String() string }).String()), &rep); err != nil {
		t.Fatal(err)
	}
	q := func(i int) string {
		if rep.Variants[i].Qualified == nil {
			return "null"
		}
		return *rep.Variants[i].Qualified
	}
	if q(0) != qualify.Qualified || q(1) != "null" || q(2) != qualify.Stale {
		t.Fatalf("qualified: %s %s %s", q(0), q(1), q(2))
	}
	if v := rep.Variants[0]; v.Intelligibility == nil || *v.Intelligibility != qualify.NotChecked || v.WER != nil {
		t.Fatalf("not checked: %+v", v)
	}

	// A run that measured the word error rate shows it.
	wer := 0.0131
	m.Intelligibility = qualify.Intelligibility{Checked: true, WER: &wer, Words: 1221, Errors: 16, GateWER: 0.05}
	if err := qualify.Write(x.Root, m); err != nil {
		t.Fatal(err)
	}
	ios.Out.(interface{ Reset() }).Reset()
	if err := run(context.Background(), &Options{F: f}); err != nil {
		t.Fatal(err)
	}
	rep = Report{}
	if err := json.Unmarshal([]byte(ios.Out.(interface{ String() string }).String()), &rep); err != nil {
		t.Fatal(err)
	}
	if v := rep.Variants[0]; v.Intelligibility == nil || *v.Intelligibility != "word error rate 1.31 %" || v.WER == nil || *v.WER != wer {
		t.Fatalf("checked: %+v", v)
	}
	ios.Out.(interface{ Reset() }).Reset()
	f.Global.JSON = false
	if err := run(context.Background(), &Options{F: f}); err != nil {
		t.Fatal(err)
	}
	if out := ios.Out.(interface{ String() string }).String(); !strings.Contains(out, "\tqualified 2026-01-02 03:04 UTC (word error rate 1.31 %)\t1\t1\n") {
		t.Fatalf("piped:\n%s", out)
	}
}
