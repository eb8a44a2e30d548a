package quantizecmd_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cli"
	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/safetensors/quant"
)

// Through the root command: flags, output and exit codes as a user sees them.
func TestThroughRoot(t *testing.T) {
	in := t.TempDir()
	if err := (quant.SyntheticCheckpoint{Layers: 2, Experts: 4, Hidden: 128, Inter: 64}).Write(in); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(t.TempDir(), "keep.json")
	os.WriteFile(keep, []byte(`{"0":[1,3],"1":[0]}`), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	ios, _, stdout, stderr := cmdtest.IOStreams()
	code := cli.Run(context.Background(), cmdtest.Factory(ios), []string{"quantize", in, "-o", out, "--experts", keep, "--check", "--json"})
	if code != 0 {
		t.Fatalf("quantize: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Result quant.Result
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || doc.Result.Kept != 3 {
		t.Fatalf("quantize output: %v\n%s", err, stdout)
	}

	ios, _, stdout, stderr = cmdtest.IOStreams()
	if code := cli.Run(context.Background(), cmdtest.Factory(ios), []string{"st", "inspect", out, "--by", "dtype"}); code != 0 {
		t.Fatalf("st inspect: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout.String(), "U8\t9\t") {
		t.Errorf("census of the output:\n%s", stdout)
	}

	ios, _, _, stderr = cmdtest.IOStreams()
	if code := cli.Run(context.Background(), cmdtest.Factory(ios), []string{"quantize", in, "-o", out}); code != cmdutil.ExitFailure ||
		!strings.Contains(stderr.String(), "not empty") {
		t.Errorf("existing output: want exit 1 saying so, got %d\n%s", code, stderr)
	}
	ios, _, _, _ = cmdtest.IOStreams()
	if code := cli.Run(context.Background(), cmdtest.Factory(ios), []string{"quantize", in, "-o", "x", "--coverage", "2"}); code != cmdutil.ExitUsage {
		t.Errorf("bad --coverage: want exit 2, got %d", code)
	}
}
