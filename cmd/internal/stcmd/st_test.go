package stcmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/quant"
)

func TestInspectFlags(t *testing.T) {
	cmdtest.CheckFlags(t, NewCmdInspect, []cmdtest.FlagCase[InspectOptions]{
		{Args: []string{"dir", "--tensors", "--by", "role"}, Check: func(o *InspectOptions) bool { return o.Path == "dir" && o.Tensors && o.By == "role" }},
		{Args: []string{"dir"}, Check: func(o *InspectOptions) bool { return o.By == "shape" && !o.Tensors }}, // the defaults
		{WantErr: "want one FILE or DIR argument, got 0", Code: cmdutil.ExitUsage},                            // no path
		{Args: []string{"x", "--by", "size"}, WantErr: "--by", Code: cmdutil.ExitUsage},
	})
}

func checkpoint(t *testing.T) string {
	dir := t.TempDir()
	if err := (quant.SyntheticCheckpoint{Layers: 2, Experts: 4, Hidden: 128, Inter: 64}).Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestInspectCensus(t *testing.T) {
	dir := checkpoint(t)
	ios, _, stdout, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	if err := runInspect(context.Background(), &InspectOptions{F: f, Path: dir, By: "shape"}); err != nil {
		t.Fatal(err)
	}
	// 2 layers x 4 experts x 2 (gate, up) F8_E4M3 [64,128] weights.
	if !strings.Contains(stdout.String(), "[64,128]\tF8_E4M3\t16\t131072\t131072\n") {
		t.Errorf("census:\n%s", stdout)
	}
	stdout.Reset()
	f.Global.JSON = true
	if err := runInspect(context.Background(), &InspectOptions{F: f, Path: dir, By: "role", Tensors: true}); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Shards) != 2 || len(rep.Problems) != 0 || len(rep.List) != rep.Tensors || rep.Roles[0].Role != "expert" {
		t.Errorf("report: %+v", rep)
	}
}

func TestInspectProblems(t *testing.T) {
	dir := checkpoint(t)
	ix, err := safetensors.ReadIndex(filepath.Join(dir, safetensors.IndexName))
	if err != nil {
		t.Fatal(err)
	}
	ix.WeightMap["model.layers.9.ghost.weight"] = "model-00001-of-00002.safetensors"
	b, _ := ix.Marshal()
	os.WriteFile(filepath.Join(dir, safetensors.IndexName), b, 0o644)
	ios, _, _, stderr := cmdtest.IOStreams()
	err = runInspect(context.Background(), &InspectOptions{F: cmdtest.Factory(ios), Path: dir, By: "dtype"})
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !strings.Contains(stderr.String(), `tensor "model.layers.9.ghost.weight": named in`) {
		t.Errorf("want exit 3 and the problem on stderr, got %v\n%s", err, stderr)
	}
	ios, _, _, _ = cmdtest.IOStreams()
	if err := runInspect(context.Background(), &InspectOptions{F: cmdtest.Factory(ios), Path: filepath.Join(dir, "nope"), By: "dtype"}); cmdutil.ExitCode(err) != cmdutil.ExitFailure {
		t.Errorf("missing path: want exit 1, got %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.safetensors")
	os.WriteFile(bad, []byte("\x08\x00\x00\x00\x00\x00\x00\x00[1,2,3]"), 0o644)
	err = runInspect(context.Background(), &InspectOptions{F: cmdtest.Factory(ios), Path: bad, By: "dtype"})
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !strings.Contains(err.Error(), "bad.safetensors") {
		t.Errorf("malformed file: want exit 3 naming the file, got %v", err)
	}
}
