package encodecmd

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
)

func TestEncodeOnARootWithoutTheVariantSaysSoFirst(t *testing.T) {
	ios, _, _, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root, f.Global.Variant = t.TempDir(), "nvfp4"
	err := run(context.Background(), &Options{F: f, Name: "Anna", Manifest: "no-such-dir"})
	want := "nvfp4 is not installed in " + f.Global.Root + ": run drama fetch --variant nvfp4 --root " + f.Global.Root + " (or give --model-dir DIR holding codec.pth)"
	if err == nil || err.Error() != want || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v\nwant    %s", err, want)
	}
	if errOut.Len() != 0 {
		t.Fatalf("no work before the check, got %q", errOut)
	}
}
