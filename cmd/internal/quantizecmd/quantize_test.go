package quantizecmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/safetensors/quant"
)

func TestFlags(t *testing.T) {
	cmdtest.CheckFlags(t, NewCmd, []cmdtest.FlagCase[Options]{
		{Args: []string{"in", "-o", "out"}, Check: func(o *Options) bool {
			return o.In == "in" && o.Out == "out" && o.To == "nvfp4" && o.Layout == "modelopt" && o.Coverage == 0.9 && !o.Check
		}},
		{Args: []string{"in", "-o", "out", "--to", "nvfp4", "--layout", "compressed-tensors", "--experts", "k.json", "--workers", "8", "--check", "--f32-intermediate"}, Check: func(o *Options) bool {
			return o.Layout == "compressed-tensors" && o.Experts == "k.json" && o.Workers == 8 && o.Check && o.F32Intermediate
		}},
		{Args: []string{"in", "-o", "out", "--router-stats", "s.json", "--coverage", "0.5"}, Check: func(o *Options) bool { return o.RouterStats == "s.json" && o.Coverage == 0.5 }},
		{Args: []string{"in", "-o", "out", "--dequantize"}, Check: func(o *Options) bool { return o.Dequantize }},
		{Args: []string{"in", "-o", "out", "--check", "--max-nmse", "0.02"}, Check: func(o *Options) bool { return o.Check && o.MaxNMSE == 0.02 }},
		{Args: []string{"in", "-o", "out", "--to", "fp8-block", "--recipe", "r.json"}, Check: func(o *Options) bool { return o.To == "fp8-block" && o.Recipe == "r.json" }},
		{Args: []string{"in"}, WantErr: "-o OUT_DIR is required", Code: cmdutil.ExitUsage},
		{Args: []string{"-o", "x"}, WantErr: "want one IN_DIR argument, got 0", Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--to", "int4"}, WantErr: `--to "int4"`, Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--to", "nvfp4", "--dequantize"}, WantErr: "exclude each other", Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--layout", "gguf"}, WantErr: `--layout "gguf"`, Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--to", "fp8-block", "--layout", "modelopt"}, WantErr: "--to nvfp4 only", Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--experts", "a", "--router-stats", "b"}, WantErr: "exclude each other", Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--coverage", "0.5"}, WantErr: "needs --router-stats", Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--router-stats", "b", "--coverage", "0"}, WantErr: "outside (0, 1]", Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--router-stats", "b", "--coverage", "1.5"}, WantErr: "outside (0, 1]", Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--workers", "-2"}, WantErr: "--workers", Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--max-nmse", "0.1"}, WantErr: "needs --check", Code: cmdutil.ExitUsage},
		{Args: []string{"in", "-o", "x", "--check", "--max-nmse", "-1"}, WantErr: "--max-nmse must be", Code: cmdutil.ExitUsage},
	})
}

// writeCheckpoint makes a tiny BF16 checkpoint, converts it to block FP8
// with the command itself, and returns the FP8 directory.
func writeCheckpoint(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := quant.SyntheticCheckpoint{Layers: 2, Experts: 4, Hidden: 128, Inter: 64}
	if err := src.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunEndToEnd(t *testing.T) {
	in := writeCheckpoint(t)
	stats := filepath.Join(t.TempDir(), "stats.json")
	os.WriteFile(stats, []byte(`{"0":[5,1,1,3],"1":[0,0,2,8]}`), 0o644)
	out := filepath.Join(t.TempDir(), "nv")
	ios, _, stdout, stderr := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.JSON = true
	opts := &Options{F: f, In: in, Out: out, To: "nvfp4", Layout: "modelopt", RouterStats: stats, Coverage: 0.75, Check: true}
	if err := run(context.Background(), opts); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var doc Output
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	// layer 0: 5+3 = 8 of 10 >= 7.5; layer 1: 8 of 10.
	if doc.Result.Kept != 3 || doc.Result.Pruned != 5 || doc.Check == nil || doc.Check.Failed != 0 || len(doc.Check.Tensors) != 9 {
		t.Errorf("output: %s", stdout)
	}
	if !strings.Contains(stdout.String(), `"drama_experts": {`) {
		t.Errorf("no drama_experts in the output: %s", stdout)
	}
}

func TestRunText(t *testing.T) {
	in := writeCheckpoint(t)
	ios, _, stdout, _ := cmdtest.IOStreams()
	ios.SetStdoutTTY(true)
	f := cmdtest.Factory(ios)
	out := filepath.Join(t.TempDir(), "o")
	if err := run(context.Background(), &Options{F: f, In: in, Out: out, To: "nvfp4", Layout: "compressed-tensors", Check: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nvfp4 (compressed-tensors)", "24 expert projections", "8 kept, 0 pruned", "24 tensors, 0 failed"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("missing %q in:\n%s", want, stdout)
		}
	}
}

func TestRunErrors(t *testing.T) {
	in := writeCheckpoint(t)
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	keep := filepath.Join(t.TempDir(), "keep.json")
	os.WriteFile(keep, []byte(`{"0":[0,9],"1":[0]}`), 0o644)
	parent := t.TempDir()
	err := run(context.Background(), &Options{F: f, In: in, Out: filepath.Join(parent, "o"), To: "nvfp4", Layout: "modelopt", Experts: keep})
	if !errors.Is(err, quant.ErrKeepList) || !strings.Contains(err.Error(), "expert 9 does not exist") {
		t.Errorf("bad keep list: %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
	if err := run(context.Background(), &Options{F: f, In: filepath.Join(parent, "none"), Out: filepath.Join(parent, "o"), To: "nvfp4", Layout: "modelopt"}); err == nil {
		t.Error("missing input: want an error")
	}
}

func TestRunCheckBound(t *testing.T) {
	in := writeCheckpoint(t)
	ios, _, _, stderr := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	out := filepath.Join(t.TempDir(), "o")
	err := run(context.Background(), &Options{F: f, In: in, Out: out, To: "nvfp4", Layout: "modelopt", Check: true, MaxNMSE: 1e-4})
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !strings.Contains(stderr.String(), "is above the bound") {
		t.Errorf("want exit 3 and the bound named, got %v\n%s", err, stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("a failed check keeps the output: %v", err)
	}
}
