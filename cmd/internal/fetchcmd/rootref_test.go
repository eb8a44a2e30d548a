package fetchcmd

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// Two roots fetching one commit into one cache each leave their own ref,
// so removing the install of one keeps every blob the other links to.
func TestFetchWritesARefPerRootThatRemovalHonours(t *testing.T) {
	e := newTestEnv(t, true)
	roots := []string{filepath.Join(e.dir, "a"), filepath.Join(e.dir, "b")}
	for _, root := range roots {
		ios, _, _, errOut := cmdutil.Test()
		f := e.factory(ios)
		f.Global.Root = root
		if err := runFetch(context.Background(), e.opts(f)); err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
	}
	cache := hub.Cache{Dir: e.cache}
	for _, ref := range []string{hub.PinnedRef, hub.RootRef(roots[0]), hub.RootRef(roots[1])} {
		if c, err := cache.ReadRef("fishaudio/drama-3", ref); err != nil || c != testCommit {
			t.Fatalf("ref %s: %q %v", ref, c, err)
		}
	}
	installs, err := pins.Installed(roots[0])
	if err != nil || len(installs) != 1 {
		t.Fatalf("installs %v %v", installs, err)
	}
	placed := hub.Locate(installs[0], []hub.Cache{cache})
	plan, err := hub.PlanRemoval(roots[0], installs[0], placed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Blobs) != 0 || len(plan.Kept) != len(e.files) || plan.Freed != 0 {
		t.Fatalf("removing root a's install touches root b's blobs: %+v", plan)
	}
	if err := plan.Apply(installs[0].Dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range e.files {
		got, err := os.ReadFile(filepath.Join(roots[1], "full", filepath.FromSlash(name)))
		if err != nil || string(got) != string(want) {
			t.Fatalf("root b lost %s: %v", name, err)
		}
	}
	if _, err := cache.ReadRef("fishaudio/drama-3", hub.RootRef(roots[0])); !os.IsNotExist(err) {
		t.Fatalf("root a's ref is left: %v", err)
	}
}
