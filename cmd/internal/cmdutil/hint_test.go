package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/pins"
)

func TestSuggestRepeatsTheUserFlags(t *testing.T) {
	ios, _, _, _ := testStreams()
	f := testFactory(ios)
	for _, tt := range []struct {
		root  string
		words []string
		want  string
	}{
		{"", []string{"fetch", "--variant", "full"}, "drama fetch --variant full"},
		{"/srv/drama", []string{"fetch", "--variant", "full", "--pins", ""}, "drama fetch --variant full --root /srv/drama"},
		{"/srv/my root", []string{"fetch", "--pins", "it's.json", "--accept-license", "true"}, `drama fetch --pins 'it'\''s.json' --accept-license --root '/srv/my root'`},
		{"/r", []string{"serve", "--root", "/r", "--addr", "127.0.0.1:1"}, "drama serve --root /r --addr 127.0.0.1:1"},
		{"", []string{"voice", "prepare", "take 1.wav", "-o", "DIR"}, "drama voice prepare 'take 1.wav' -o DIR"},
	} {
		f.Global.Root = tt.root
		if got := f.Suggest(tt.words...); got != tt.want {
			t.Errorf("Suggest(%q)\n got %s\nwant %s", tt.words, got, tt.want)
		}
	}
}

func TestGivenFlagsAndWithFlag(t *testing.T) {
	var root, addr string
	var force bool
	cmd := &cobra.Command{Use: "serve", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8793", "")
	cmd.Flags().BoolVar(&force, "force", false, "")
	cmd.Flags().StringVar(&root, "unused", "x", "")
	cmd.SetArgs([]string{"--force", "--addr", "127.0.0.1:9"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	got := GivenFlags(cmd)
	if len(got) != 4 || got[0] != "--addr" || got[1] != "127.0.0.1:9" || got[2] != "--force" || got[3] != "true" {
		t.Fatalf("GivenFlags = %q", got)
	}
	if w := WithFlag(got, "--addr", "127.0.0.1:10"); w[1] != "127.0.0.1:10" || len(w) != 4 {
		t.Fatalf("WithFlag replace = %q", w)
	}
	if w := WithFlag(got, "--admission", "off"); len(w) != 6 || w[5] != "off" || got[1] != "127.0.0.1:9" {
		t.Fatalf("WithFlag add = %q (and the input stays)", w)
	}
}

func TestRequireInstalled(t *testing.T) {
	ios, _, _, _ := testStreams()
	f := testFactory(ios)
	f.Global.Root = t.TempDir()
	err := RequireInstalled(f, "nvfp4", "--pins", "p.json")
	var ni *NotInstalledError
	if !errors.As(err, &ni) || !errors.Is(err, fs.ErrNotExist) ||
		err.Error() != "nvfp4 is not installed in "+f.Global.Root+": run drama fetch --variant nvfp4 --pins p.json --root "+f.Global.Root {
		t.Fatalf("err = %v", err)
	}
	os.MkdirAll(filepath.Join(f.Global.Root, "nvfp4", ".drama"), 0o755)
	if RequireInstalled(f, "nvfp4") == nil {
		t.Fatal("drama's own state is not an install")
	}
	os.WriteFile(filepath.Join(f.Global.Root, "nvfp4", "config.json"), []byte("{}"), 0o644)
	if err := RequireInstalled(f, "nvfp4"); err != nil {
		t.Fatal(err)
	}
}

func TestPinsAdviceRepeatsTheUserFlags(t *testing.T) {
	ios, _, _, _ := testStreams()
	f := testFactory(ios)
	f.Global.Root = "/srv/drama"
	p := &pins.Pins{Variant: "nvfp4"}
	incomplete := fmt.Errorf("pins: variant nvfp4: %w", pins.ErrIncomplete)
	err := PinsAdvice(f, incomplete, p, "my.json")
	want := "pins: variant nvfp4: incomplete pins: run drama pins lock --variant nvfp4 --pins my.json --root /srv/drama" +
		" (or drama fetch --variant nvfp4 --pins my.json --root /srv/drama) to fill them in"
	if !errors.Is(err, pins.ErrIncomplete) || err.Error() != want {
		t.Errorf("incomplete:\n got %v\nwant %s", err, want)
	}
	err = PinsAdvice(f, fmt.Errorf("pins: /x: %w", pins.ErrNoDir), p, "")
	want = "pins: /x: directory does not exist: run drama fetch --variant nvfp4 --root /srv/drama, or pass the --root that holds it"
	if !errors.Is(err, pins.ErrNoDir) || err.Error() != want {
		t.Errorf("no dir:\n got %v\nwant %s", err, want)
	}
	other := errors.New("boom")
	if PinsAdvice(f, other, p, "") != other || PinsAdvice(f, nil, p, "") != nil {
		t.Error("other errors and nil must come back unchanged")
	}
}
