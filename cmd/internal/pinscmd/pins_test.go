package pinscmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/pins"
)

func TestMakeFlags(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	var got *MakeOptions
	runF := func(_ context.Context, o *MakeOptions) error { got = o; return nil }
	if err := cmdtest.Execute(NewCmdMake(f, runF), strings.Fields("dir -o out.json --repo a/b --serve-flag=--x --serve-flag=1 --memory-gib 2.5 --local")...); err != nil {
		t.Fatal(err)
	}
	if got.Dir != "dir" || got.Output != "out.json" || got.Repo != "a/b" || strings.Join(got.ServeFlags, " ") != "--x 1" || got.MemoryGiB != 2.5 || !got.Local {
		t.Fatalf("%+v", got)
	}
	if err := cmdtest.Execute(NewCmdMake(f, runF), "dir"); err == nil || !strings.Contains(err.Error(), "-o FILE is required") {
		t.Fatalf("err = %v", err)
	}
	if err := cmdtest.Execute(NewCmdMake(f, runF), strings.Fields("")...); err == nil {
		t.Fatal("no DIR accepted")
	}
}

func TestDiffAndShowFlags(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	var d *DiffOptions
	if err := cmdtest.Execute(NewCmdDiff(f, func(_ context.Context, o *DiffOptions) error { d = o; return nil }), strings.Fields("full nvfp4")...); err != nil || d.A != "full" || d.B != "nvfp4" {
		t.Fatalf("%v %+v", err, d)
	}
	if err := cmdtest.Execute(NewCmdDiff(f, nil), strings.Fields("full")...); err == nil {
		t.Fatal("one argument accepted")
	}
	var s *ShowOptions
	if err := cmdtest.Execute(NewCmdShow(f, func(_ context.Context, o *ShowOptions) error { s = o; return nil }), strings.Fields("--pins p.json")...); err != nil || s.PinsFile != "p.json" {
		t.Fatalf("%v %+v", err, s)
	}
}

func TestMakeShowDiffRun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "codec.pth"), []byte("codec"), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("weights"), 0o644)
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "HOME", t.TempDir())
	f.Global.Variant = "nvfp4"
	outFile := filepath.Join(t.TempDir(), "p.json")
	if err := runMake(context.Background(), &MakeOptions{F: f, Dir: dir, Output: outFile}); err != nil {
		t.Fatal(err)
	}
	p, err := pins.ReadFile(outFile)
	if err != nil || !p.Complete() || p.Repo != "plotarmordev/drama-3-NVFP4-Pruned" || len(p.Files) != 2 {
		t.Fatalf("%v %+v", err, p)
	}
	if err := runShow(context.Background(), &ShowOptions{F: f, PinsFile: outFile}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nfile\tcodec.pth\t5\t") {
		t.Fatalf("show: %q", out.String())
	}
	out.Reset()
	if err := runDiff(context.Background(), &DiffOptions{F: f, A: outFile, B: "nvfp4"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "\ncodec.pth\tremoved\t5\t-\nmodel.safetensors\tremoved\t7\t-\n") {
		t.Fatalf("diff: %q", out.String())
	}
}

// Pins made of files that are not the variant's repository's say so in
// words, with what to pass, and carry no totals their files contradict.
func TestMakeOfOtherFilesSaysWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"), []byte("weights"), 0o644)
	ios, _, _, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "HOME", t.TempDir())
	outFile := filepath.Join(t.TempDir(), "p.json")
	if err := runMake(context.Background(), &MakeOptions{F: f, Dir: dir, Output: outFile}); err != nil {
		t.Fatal(err)
	}
	w := errOut.String()
	if strings.Contains(w, "invalid pins") || !strings.Contains(w, "warning: the files in "+dir+" are not those of fishaudio/drama-3 at e0a9218aa488") ||
		!strings.Contains(w, "7 B in *.safetensors, where the repository has 38.6 GiB") || !strings.Contains(w, "pass --local") {
		t.Fatalf("warning: %q", w)
	}
	p, err := pins.ReadFile(outFile)
	if err != nil || p.ExpectedBytes != 0 || p.ExpectedFiles != 0 || p.CheckExpected() != nil {
		t.Fatalf("%v %+v", err, p)
	}
}
