package pinscmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
)

// The output of pins show and pins diff for the built-in pins, in the three
// modes: a table on a terminal, tab-separated rows when piped, JSON.

func showBuiltin(t *testing.T, tty, jsonFlag bool) (string, string) {
	t.Helper()
	ios, _, out, errOut := cmdtest.IOStreams()
	ios.SetStdoutTTY(tty)
	f := cmdtest.Factory(ios)
	f.Global.Root, f.Global.JSON, f.Global.Variant = t.TempDir(), jsonFlag, "nvfp4"
	if err := runShow(context.Background(), &ShowOptions{F: f}); err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String()
}

func TestShowBuiltinOnATerminal(t *testing.T) {
	out, _ := showBuiltin(t, true, false)
	wantAll(t, "stdout", out,
		"variant:   nvfp4\n",
		"repo:      plotarmordev/drama-3-NVFP4-Pruned@494db08481db952f834b2241bce63fb3dfa72554\n",
		"licence:   Fish Audio Community License v1.0\n",
		"flags:     --cfg-gamma 1.5 --cfg-batched\n",
		"memory:    19.7 GiB\n",
		"files:     none listed until the pins are complete\n",
		"expected:  17 files\n",
		"expected:  20.8 GiB (22294649076 bytes) in *.safetensors, codec.pth\n",
	)
}

func TestShowBuiltinPiped(t *testing.T) {
	out, errOut := showBuiltin(t, false, false)
	want := "variant\tnvfp4\nrepo\tplotarmordev/drama-3-NVFP4-Pruned\nrevision\t494db08481db952f834b2241bce63fb3dfa72554\n" +
		"license\tFish Audio Community License v1.0\nengine\tcuda\nserve_flags\t--cfg-gamma 1.5 --cfg-batched\nmemory_gib\t19.7\n" +
		"files\t0\nbytes\t0\nexpected_files\t17\nexpected_bytes\t22294649076\nexpected_bytes_of\t*.safetensors codec.pth\n"
	if out != want {
		t.Fatalf("stdout\n%q\nwant\n%q", out, want)
	}
	if !strings.Contains(errOut, "run drama pins lock --variant nvfp4 --root ") {
		t.Errorf("stderr %q: want the lock hint with --root", errOut)
	}
}

func TestShowBuiltinJSON(t *testing.T) {
	out, _ := showBuiltin(t, false, true)
	var got struct {
		Variant, Repo, Revision string
		MemoryGiB               float64 `json:"memory_gib"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Variant != "nvfp4" || got.Repo != "plotarmordev/drama-3-NVFP4-Pruned" || got.MemoryGiB != 19.7 {
		t.Fatalf("%v %+v\n%s", err, got, out)
	}
}

func diffBuiltin(t *testing.T, tty, jsonFlag bool, a, b string) (string, error) {
	t.Helper()
	ios, _, out, _ := cmdtest.IOStreams()
	ios.SetStdoutTTY(tty)
	f := cmdtest.Factory(ios)
	f.Global.Root, f.Global.JSON = t.TempDir(), jsonFlag
	err := runDiff(context.Background(), &DiffOptions{F: f, A: a, B: b})
	return out.String(), err
}

func TestDiffBuiltinComparesTheFields(t *testing.T) {
	piped, err := diffBuiltin(t, false, false, "full", "nvfp4")
	if err != nil {
		t.Fatal(err)
	}
	wantAll(t, "piped diff", piped,
		"variant\tchanged\tfull\tnvfp4\n",
		"repo\tchanged\tfishaudio/drama-3\tplotarmordev/drama-3-NVFP4-Pruned\n",
		"license\tsame\tFish Audio Community License v1.0\tFish Audio Community License v1.0\n",
		"engine\tsame\tcuda\tcuda\n",
		"serve_flags\tchanged\t-\t--cfg-gamma 1.5 --cfg-batched\n",
	)
	tty, _ := diffBuiltin(t, true, false, "full", "nvfp4")
	if !strings.HasPrefix(tty, "FIELD OR PATH") || !strings.Contains(tty, "fishaudio/drama-3") {
		t.Errorf("terminal diff %q", tty)
	}
	js, _ := diffBuiltin(t, false, true, "full", "nvfp4")
	var got struct {
		Fields []struct {
			Field, A, B string
			Same        bool
		}
		Changes []any
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil || len(got.Fields) == 0 || got.Fields[1].Field != "repo" || got.Fields[1].Same {
		t.Fatalf("%v %+v\n%s", err, got, js)
	}
	if strings.Contains(js, `"changes": null`) || strings.TrimSpace(js) == "[]" {
		t.Errorf("json diff %s", js)
	}
}

func TestDiffUnknownVariantIsAUsageError(t *testing.T) {
	_, err := diffBuiltin(t, false, false, "full", "nvfp5")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), `"nvfp5" is neither a variant (full, nvfp4, macos) nor a pins file`) {
		t.Fatalf("exit %d: %v", cmdutil.ExitCode(err), err)
	}
}

// wantAll reports each of wants that the output named what lacks.
func wantAll(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%s %q\nwant %q", what, out, want)
		}
	}
}
