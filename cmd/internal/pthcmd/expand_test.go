package pthcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/pth/pthtest"
)

// TestConvertRefusesBroadcastViews plays a hostile codec.pth whose
// stride-0 views would write megabytes from 4 stored bytes (gigabytes at
// full scale): convert exits 3 before making the output, names the bytes
// and the view, and gives the user's own command line with --allow-expand,
// which then works as written.
func TestConvertRefusesBroadcastViews(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "codec.pth"), filepath.Join(dir, "codec.safetensors")
	pthtest.WriteArchive(t, src, []float32{2}, pthtest.Broadcasts(3, 1<<20)...)
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	err := cmdtest.Execute(cmdtest.NewRoot(f, NewCmd(f)), "pth", "convert", src, "-o", dst, "--dtype", "f32", "--root", dir)
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch {
		t.Fatalf("want exit 3, got %d: %v", cmdutil.ExitCode(err), err)
	}
	if _, serr := os.Stat(dst); !os.IsNotExist(serr) {
		t.Errorf("output made: %v", serr)
	}
	msg := err.Error()
	hint := "drama pth convert " + src + " --dtype f32 --output " + dst + " --root " + dir + " --allow-expand"
	for _, want := range []string{"convert: " + src + ": its tensors", "12582912 bytes", "from 4 bytes of storage", `"b0" of shape [1048576], strides [0]`, "run " + hint} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	ios, _, _, _ = cmdtest.IOStreams()
	f = cmdtest.Factory(ios)
	if err := cmdtest.Execute(cmdtest.NewRoot(f, NewCmd(f)), strings.Fields(hint)[1:]...); err != nil {
		t.Fatalf("the hint %q: %v", hint, err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Size() < 3*4<<20 {
		t.Errorf("with --allow-expand: %v", err)
	}
}
