package pthcmd

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
	"github.com/drama-tts/drama/pth"
	"github.com/drama-tts/drama/safetensors"
)

const testdata = "../../../pth/testdata/"

func TestConvertFlags(t *testing.T) {
	cmdtest.CheckFlags(t, NewCmdConvert, []cmdtest.FlagCase[ConvertOptions]{
		{Args: []string{"in.pth", "-o", "out.st"}, Check: func(o *ConvertOptions) bool {
			return o.File == "in.pth" && o.Output == "out.st" && o.DType == "keep" && o.StripPrefix == "generator." && !o.FoldWeightNorm
		}},
		{Args: []string{"in.pth", "--output=o", "--dtype", "bf16", "--fold-weight-norm", "--strip-prefix", "", "--drop", "^disc", "--workers", "3", "--force"}, Check: func(o *ConvertOptions) bool {
			return o.DType == "bf16" && o.FoldWeightNorm && o.StripPrefix == "" && o.Drop == "^disc" && o.Workers == 3 && o.Force
		}},
		{Args: []string{"in.pth", "-o", "o", "--allow-expand"}, Check: func(o *ConvertOptions) bool {
			return o.AllowExpand && strings.Join(o.Given, " ") == "--allow-expand true --output o"
		}},
		{Args: []string{"in.pth"}, WantErr: "-o OUT.safetensors is required"},
		{Args: []string{"in.pth", "-o", "x", "--dtype", "f8"}, WantErr: `--dtype "f8"`},
		{Args: []string{"in.pth", "-o", "x", "--drop", "("}, WantErr: "--drop"},
		{Args: []string{"in.pth", "-o", "x", "--workers", "-1"}, WantErr: "--workers"},
		{Args: []string{"-o", "x"}, WantErr: "accepts 1 arg"},
		{Args: []string{"in.pth", "-o", "x", "--source-sha256", "abc"}, WantErr: "--source-sha256"},
		{Args: []string{"in.pth", "-o", "x", "--source-sha256", strings.Repeat("0f", 32)}, Check: func(o *ConvertOptions) bool { return o.SourceSHA256 == strings.Repeat("0f", 32) }},
	})
	var fe *cmdutil.FlagError
	if _, err := cmdtest.ParseOptions(NewCmdConvert, "in.pth", "-o", "x", "--dtype", "f8"); !errors.As(err, &fe) {
		t.Errorf("bad --dtype: want a usage error, got %T", err)
	}
}

func TestInspectFlags(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	var got *InspectOptions
	if err := cmdtest.Execute(NewCmdInspect(f, func(_ context.Context, o *InspectOptions) error { got = o; return nil }), "codec.pth"); err != nil || got.File != "codec.pth" {
		t.Fatalf("%v %+v", err, got)
	}
	if err := cmdtest.Execute(NewCmdInspect(f, nil)); err == nil {
		t.Error("no FILE accepted")
	}
}

func TestInspectText(t *testing.T) {
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	if err := runInspect(context.Background(), &InspectOptions{F: f, File: testdata + "dtypes.pth"}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"format:   zip (archive prefix \"dtypes\", version 3)", "tensors:  23 in 16 storages", "F8_E4M3 x1", "not the Drama codec", "\ntransposed\tF32\t[6, 4]\n", "\nscalar\tF32\t[]\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

func TestInspectJSON(t *testing.T) {
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.JSON = true
	if err := runInspect(context.Background(), &InspectOptions{F: f, File: testdata + "generator.pth"}); err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Format != pth.FormatZip || s.Container != "state_dict" || s.TensorCount != 5 || s.Tensors[0].Name != "generator.a" || s.DTypes["F32"] != 3 {
		t.Errorf("%+v", s)
	}
}

func TestInspectBadFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pth")
	os.WriteFile(bad, []byte("PYTORCH1 and more"), 0o644)
	ios, _, _, _ := cmdtest.IOStreams()
	err := runInspect(context.Background(), &InspectOptions{F: cmdtest.Factory(ios), File: bad})
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !errors.Is(err, pth.ErrFormat) {
		t.Errorf("want exit 3 wrapping ErrFormat, got %d: %v", cmdutil.ExitCode(err), err)
	}
	err = runInspect(context.Background(), &InspectOptions{F: cmdtest.Factory(ios), File: filepath.Join(dir, "none.pth")})
	if cmdutil.ExitCode(err) != cmdutil.ExitFailure || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: want exit 1, got %d: %v", cmdutil.ExitCode(err), err)
	}
}

func TestConvertRun(t *testing.T) {
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.JSON = true
	dst := filepath.Join(t.TempDir(), "wn.safetensors")
	opts := &ConvertOptions{F: f, File: testdata + "wn.pth", Output: dst, DType: "f16", FoldWeightNorm: true, Drop: `^alpha$`}
	if err := runConvert(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var res ConvertResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Tensors != 8 || res.Folded != 4 || len(res.Dropped) != 1 || len(res.SourceSHA256) != 64 || errOut.Len() != 0 {
		t.Errorf("%+v, stderr %q", res, errOut)
	}
	st, err := safetensors.OpenReader(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if x, err := st.Tensor("up.weight"); err != nil || x.DType != safetensors.F16 || st.Metadata["source_sha256"] != res.SourceSHA256 {
		t.Errorf("up.weight: %v %+v", err, st.Metadata)
	}
	// An existing output is kept unless --force.
	err = runConvert(context.Background(), opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Errorf("existing output: want exit 2, got %v", err)
	}
	opts.Force = true
	if err := runConvert(context.Background(), opts); err != nil {
		t.Errorf("--force: %v", err)
	}
	same := &ConvertOptions{F: f, File: dst, Output: dst, DType: "keep", Force: true}
	if err := runConvert(context.Background(), same); err == nil || !strings.Contains(err.Error(), "is the input file") {
		t.Errorf("output = input: %v", err)
	}
}

func TestConvertCancelled(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := runConvert(ctx, &ConvertOptions{F: cmdtest.Factory(ios), File: testdata + "casts.pth", Output: filepath.Join(dir, "o.safetensors"), DType: "keep"})
	if cmdutil.ExitCode(err) != cmdutil.ExitInterrupted {
		t.Errorf("want exit 130, got %d: %v", cmdutil.ExitCode(err), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %v", ents)
	}
}

func TestInspectVerify(t *testing.T) {
	b, err := os.ReadFile(testdata + "wn.pth")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.pth"), filepath.Join(dir, "bad.pth")
	os.WriteFile(good, b, 0o644)
	r, err := pth.OpenReader(good)
	if err != nil {
		t.Fatal(err)
	}
	b[r.Tensors[3].FileOffset()+5] ^= 1
	r.Close()
	os.WriteFile(bad, b, 0o644)
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	if err := runInspect(context.Background(), &InspectOptions{F: f, File: good, Verify: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "checksums: 19 records match their CRC-32") {
		t.Errorf("output: %s", out)
	}
	err = runInspect(context.Background(), &InspectOptions{F: f, File: bad, Verify: true})
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !errors.Is(err, pth.ErrChecksum) {
		t.Errorf("damaged: want exit 3 wrapping ErrChecksum, got %v", err)
	}
	var got *InspectOptions
	if err := cmdtest.Execute(NewCmdInspect(f, func(_ context.Context, o *InspectOptions) error { got = o; return nil }), "x.pth", "--verify"); err != nil || !got.Verify {
		t.Errorf("--verify: %v %+v", err, got)
	}
}

func TestPrintCodec(t *testing.T) {
	ios, _, out, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	g := &pth.CodecGeometry{SampleRate: 44100, FrameSamples: 2048, FrameRate: 44100.0 / 2048,
		Codebooks:    []int{4096, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024},
		EncoderRates: []int{2, 4, 8, 8}, DecoderRates: []int{8, 8, 4, 2}, Downsample: []int{2, 2}}
	printCodec(f, pth.CodecReport{Recognized: true, Complete: true, Geometry: g})
	want := "codec:    Drama codec (complete): 44100 Hz, 2048 samples a frame (21.533 frames/s), codebooks 1 x 4096 + 9 x 1024\n" +
		"          encoder rates [2 4 8 8], quantizer downsample [2 2], decoder rates [8 8 4 2]\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	out.Reset()
	printCodec(f, pth.CodecReport{Recognized: true, Geometry: g, Missing: []string{"a"}, Unexpected: []string{"b"}, Mismatched: []string{"c: want [1], got [2]"}})
	for _, s := range []string{"(1 missing, 1 unexpected, 1 of another shape)", "missing: a\n", "unexpected: b\n", "shape: c: want [1], got [2]\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestNewCmd(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	cmd := NewCmd(cmdtest.Factory(ios))
	var names []string
	for _, c := range cmd.Commands() {
		names = append(names, c.Name())
	}
	if strings.Join(names, ",") != "convert,inspect" {
		t.Errorf("subcommands %v", names)
	}
}
