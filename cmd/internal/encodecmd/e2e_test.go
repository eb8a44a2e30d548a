package encodecmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/native/standin"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
)

// e2eEnv runs encode through the real CUDA plugin process, which runs the
// stand-in's "voice encode" for each reference.
func e2eEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.opts.OpenEngine = nil
	e.opts.PluginDir = binDir
	e.opts.EngineBin = filepath.Join(binDir, "tensorfold-standin")
	root, _ := e.opts.F.Root()
	model := filepath.Join(root, "full")
	os.MkdirAll(model, 0o755)
	os.WriteFile(filepath.Join(model, "codec.pth"), []byte("stand-in codec"), 0o644)
	return e
}

func TestEncodeThroughCUDAPluginAndStandin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plugin processes")
	}
	e := e2eEnv(t)
	e.opts.Manifest = preparedDir(t, true)
	if err := run(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	root, _ := e.opts.F.Root()
	v, err := voices.ReadFile(filepath.Join(root, "voices", "anna-example.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// the stand-in's codes are a function of the clip's samples: compare
	for i, r := range v.References {
		f, err := os.Open(filepath.Join(e.opts.Manifest, clip.RefFile(i)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := standin.EncodeClip(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if voices.Codes(want).SHA256() != r.Codes.SHA256() || r.Codes.Frames() != (r.Samples+2047)/2048 {
			t.Fatalf("reference %d: codes differ from the stand-in's", i)
		}
	}
	if !strings.Contains(e.err.String(), "encoding 1/2 ref-01.wav (19.5 s)") || !strings.Contains(e.err.String(), "encoded 2/2 ref-02.wav") {
		t.Fatalf("stderr: %q", e.err.String())
	}
}

func TestEncodeThroughPluginFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plugin processes")
	}
	dir := preparedDir(t, true)

	e := e2eEnv(t)
	e.opts.Manifest = dir
	t.Setenv(standin.EnvFault, "encode-fail")
	err := run(context.Background(), e.opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitEngine || !strings.Contains(err.Error(), "out of memory (simulated)") {
		t.Fatalf("want exit 4 with the encoder's words, got %v", err)
	}
	t.Setenv(standin.EnvFault, "")

	e = e2eEnv(t)
	e.opts.Manifest, e.opts.PluginDir = dir, t.TempDir()
	e.opts.F.Global.Root, _ = e.opts.F.Root() // the install stays; only the plugin search loses $DRAMA_PLUGIN_DIR
	e.opts.F.Getenv = func(string) string { return "" }
	if err := run(context.Background(), e.opts); cmdutil.ExitCode(err) != cmdutil.ExitEngine || !strings.Contains(err.Error(), "drama-engine-cuda") {
		t.Fatalf("want exit 4 naming the missing plugin, got %v", err)
	}

	e = e2eEnv(t)
	e.opts.Manifest = dir
	root, _ := e.opts.F.Root()
	os.MkdirAll(filepath.Join(root, "engine"), 0o755)
	os.WriteFile(filepath.Join(root, "engine", "engine.sha256"), []byte(strings.Repeat("0", 64)+"  tensorfold-native\n"), 0o644)
	if err := run(context.Background(), e.opts); cmdutil.ExitCode(err) != cmdutil.ExitEngine || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("want exit 4 for an engine binary that is not the pinned one, got %v", err)
	}
}
