package hub_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
	"github.com/drama-tts/drama/pins/hub/hubtest"
)

const (
	ucommitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	ucommitB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	ucommitC = "cccccccccccccccccccccccccccccccccccccccc"
)

type usageFixture struct {
	*hubtest.Layout
	t     *testing.T
	root  string
	cache hub.Cache
}

func newUsageFixture(t *testing.T) *usageFixture {
	l := hubtest.New(t)
	return &usageFixture{Layout: l, t: t, root: l.Root, cache: l.Cache}
}

func fileOf(path, content string) pins.File { return hubtest.File(path, content) }

func (x *usageFixture) install(variant, repo, commit string, hard bool, files map[string]string) pins.Install {
	return x.Install(variant, repo, commit, hard, files)
}

// plan lists the root's installs and plans removing variant.
func (x *usageFixture) plan(variant string) (*hub.Removal, pins.Install) {
	t := x.t
	all, err := pins.Installed(x.root)
	if err != nil {
		t.Fatal(err)
	}
	var target pins.Install
	others := map[string][]hub.Placed{}
	for _, in := range all {
		if in.Variant == variant {
			target = in
			continue
		}
		others[in.Variant] = hub.Locate(in, []hub.Cache{x.cache})
	}
	r, err := hub.PlanRemoval(x.root, target, hub.Locate(target, []hub.Cache{x.cache}), others)
	if err != nil {
		t.Fatal(err)
	}
	return r, target
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestDiskUsageCountsSharedContentOnce(t *testing.T) {
	x := newUsageFixture(t)
	shared := map[string]string{"model.safetensors": "weights-of-nvfp4", "codec.pth": "codec"}
	nv := x.install("nvfp4", "o/pruned", ucommitA, false, shared)
	mac := x.install("macos", "o/pruned", ucommitA, false, shared)
	full := x.install("full", "o/full", ucommitB, true, map[string]string{"model.safetensors": "full-weights", "codec.pth": "codec"})
	placed := map[string][]hub.Placed{}
	for _, in := range []pins.Install{nv, mac, full} {
		placed[in.Variant] = hub.Locate(in, []hub.Cache{x.cache})
	}
	u := hub.DiskUsage([]pins.Install{nv, mac, full}, placed)
	if got, want := u.Variants["nvfp4"].Bytes, int64(len("weights-of-nvfp4")+len("codec")); got != want {
		t.Errorf("nvfp4 bytes = %d, want %d", got, want)
	}
	if got := u.Variants["nvfp4"].SharedWith; !slices.Equal(got, []string{"macos"}) {
		t.Errorf("nvfp4 shared with %v, want [macos]", got)
	}
	// "codec" is two blobs (one per repository), so it counts twice on
	// disk; the nvfp4 and macos files count once.
	if got, want := u.Bytes, int64(len("weights-of-nvfp4")+len("codec")+len("full-weights")+len("codec")); got != want {
		t.Errorf("total = %d, want %d", got, want)
	}
	for _, pl := range placed["full"] {
		if pl.Blob == "" || pl.RepoDir != x.cache.RepoDir("o/full") {
			t.Errorf("hard-linked %s: blob %q repo %q", pl.Path, pl.Blob, pl.RepoDir)
		}
	}
}

func TestPlanRemovalKeepsWhatAnotherVariantUses(t *testing.T) {
	x := newUsageFixture(t)
	shared := map[string]string{"model.safetensors": "weights-of-nvfp4", "codec.pth": "codec"}
	x.install("nvfp4", "o/pruned", ucommitA, false, shared)
	x.install("macos", "o/pruned", ucommitA, false, shared)
	r, target := x.plan("nvfp4")
	if len(r.Blobs) != 0 || len(r.Snapshots) != 0 || len(r.Refs) != 0 || r.Freed != 0 {
		t.Fatalf("removal of nvfp4 touches the cache macos uses: %+v", r)
	}
	if len(r.Kept) != 2 || !strings.Contains(r.Kept[0].Why, "variant macos") {
		t.Fatalf("kept %+v", r.Kept)
	}
	if err := r.Apply(target.Dir); err != nil {
		t.Fatal(err)
	}
	if exists(target.Dir) {
		t.Errorf("%s still exists", target.Dir)
	}
	mac := filepath.Join(x.root, "macos", "model.safetensors")
	if b, err := os.ReadFile(mac); err != nil || string(b) != "weights-of-nvfp4" {
		t.Fatalf("macos lost its file: %q %v", b, err)
	}
	// Now macos is the last user: everything goes.
	r, target = x.plan("macos")
	if len(r.Blobs) != 2 || len(r.Snapshots) != 2 || len(r.Refs) != 2 || len(r.Kept) != 0 {
		t.Fatalf("removal of the last install: %+v", r)
	}
	if want := int64(len("weights-of-nvfp4") + len("codec")); r.Freed != want {
		t.Errorf("freed %d, want %d", r.Freed, want)
	}
	if err := r.Apply(target.Dir); err != nil {
		t.Fatal(err)
	}
	if exists(x.cache.RepoDir("o/pruned")) {
		t.Errorf("the emptied repository folder %s is left", x.cache.RepoDir("o/pruned"))
	}
}

func TestPlanRemovalKeepsWhatTheCacheHoldsElsewhere(t *testing.T) {
	x := newUsageFixture(t)
	in := x.install("full", "o/full", ucommitB, false, map[string]string{"model.safetensors": "full-weights", "codec.pth": "codec"})
	// Another snapshot (a user's hf download of another commit) links
	// to the codec blob.
	codec := fileOf("codec.pth", "codec")
	if err := x.cache.Link("o/full", ucommitC, "codec.pth", hub.BlobName(codec)); err != nil {
		t.Fatal(err)
	}
	r, _ := x.plan("full")
	if len(r.Kept) != 1 || r.Kept[0].Blob != x.cache.BlobPath("o/full", hub.BlobName(codec)) || !strings.Contains(r.Kept[0].Why, "snapshot "+ucommitC) {
		t.Fatalf("kept %+v", r.Kept)
	}
	if len(r.Blobs) != 1 || r.Freed != int64(len("full-weights")) {
		t.Fatalf("blobs %v freed %d", r.Blobs, r.Freed)
	}
	if err := r.Apply(in.Dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(x.cache.SnapshotPath("o/full", ucommitC, "codec.pth")); err != nil || string(b) != "codec" {
		t.Fatalf("the other snapshot lost its file: %q %v", b, err)
	}
}

func TestPlanRemovalKeepsACommitAnotherRefNames(t *testing.T) {
	for _, ref := range []string{"main", "drama-root-0123456789ab"} {
		t.Run(ref, func(t *testing.T) {
			x := newUsageFixture(t)
			in := x.install("full", "o/full", ucommitB, false, map[string]string{"model.safetensors": "full-weights"})
			if err := x.cache.WriteRef("o/full", ref, ucommitB); err != nil {
				t.Fatal(err)
			}
			r, _ := x.plan("full")
			if len(r.Blobs) != 0 || len(r.Snapshots) != 0 || r.Freed != 0 || len(r.Kept) != 1 || !strings.Contains(r.Kept[0].Why, "ref ") {
				t.Fatalf("removal with ref %s: %+v", ref, r)
			}
			// drama-pinned stays while another root's ref names the commit.
			for _, p := range r.Refs {
				if filepath.Base(p) == hub.PinnedRef && strings.HasPrefix(ref, "drama-root-") {
					t.Errorf("drama-pinned removed while another root uses the commit")
				}
			}
			if err := r.Apply(in.Dir); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(x.cache.SnapshotPath("o/full", ucommitB, "model.safetensors")); err != nil || string(b) != "full-weights" {
				t.Fatalf("snapshot lost: %q %v", b, err)
			}
		})
	}
}

func TestPlanRemovalHardLinksAndExtras(t *testing.T) {
	x := newUsageFixture(t)
	in := x.install("full", "o/full", ucommitB, true, map[string]string{"model.safetensors": "full-weights"})
	mine := filepath.Join(in.Dir, "notes.txt")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := x.plan("full")
	if r.Freed != int64(len("full-weights")) || len(r.Blobs) != 1 {
		t.Fatalf("freed %d blobs %v", r.Freed, r.Blobs)
	}
	if !slices.Equal(r.Extra, []string{mine}) {
		t.Fatalf("extra %v", r.Extra)
	}
	if err := r.Apply(in.Dir); err != nil {
		t.Fatal(err)
	}
	if !exists(mine) {
		t.Fatal("a file drama did not place was removed")
	}
	if exists(filepath.Join(in.Dir, pins.LockFileName)) || exists(x.cache.BlobPath("o/full", hub.BlobName(fileOf("m", "full-weights")))) {
		t.Fatal("lock or blob left")
	}
}
