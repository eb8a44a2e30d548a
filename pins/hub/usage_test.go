package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drama-tts/drama/pins"
)

const (
	ucommitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	ucommitB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	ucommitC = "cccccccccccccccccccccccccccccccccccccccc"
)

// usageFixture lays out a root and a cache as drama fetch does: blobs,
// snapshot symlinks, refs, and a variant directory of symlinks (or hard
// links) into the snapshot with its lock file.
type usageFixture struct {
	t     *testing.T
	root  string
	cache Cache
}

func newUsageFixture(t *testing.T) *usageFixture {
	d := t.TempDir()
	return &usageFixture{t: t, root: filepath.Join(d, "root"), cache: Cache{Dir: filepath.Join(d, "hub")}}
}

func fileOf(path, content string) pins.File {
	sum := sha256.Sum256([]byte(content))
	return pins.File{Path: path, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), LFS: true}
}

// install fetches files of repo@commit into the cache and places them as
// variant; hard places hard links instead of symlinks.
func (x *usageFixture) install(variant, repo, commit string, hard bool, files map[string]string) pins.Install {
	t := x.t
	p := &pins.Pins{Format: pins.Format, Variant: variant, Repo: repo, RepoType: "model", Revision: commit}
	for path, content := range files {
		f := fileOf(path, content)
		p.Files = append(p.Files, f)
		x.blob(repo, f, content)
		if err := x.cache.Link(repo, commit, path, BlobName(f)); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(x.root, variant, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if hard {
			err = os.Link(x.cache.BlobPath(repo, BlobName(f)), dst)
		} else {
			err = os.Symlink(x.cache.SnapshotPath(repo, commit, path), dst)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteFile(filepath.Join(x.root, variant, pins.LockFileName)); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{PinnedRef, RootRef(x.root)} {
		if err := x.cache.WriteRef(repo, ref, commit); err != nil {
			t.Fatal(err)
		}
	}
	return pins.Install{Variant: variant, Dir: filepath.Join(x.root, variant), Pins: p}
}

func (x *usageFixture) blob(repo string, f pins.File, content string) {
	p := x.cache.BlobPath(repo, BlobName(f))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		x.t.Fatal(err)
	}
	if _, err := os.Stat(p); err == nil {
		return
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		x.t.Fatal(err)
	}
}

// plan lists the root's installs and plans removing variant.
func (x *usageFixture) plan(variant string) (*Removal, pins.Install) {
	t := x.t
	all, err := pins.Installed(x.root)
	if err != nil {
		t.Fatal(err)
	}
	var target pins.Install
	others := map[string][]Placed{}
	for _, in := range all {
		if in.Variant == variant {
			target = in
			continue
		}
		others[in.Variant] = Locate(in, []Cache{x.cache})
	}
	r, err := PlanRemoval(x.root, target, Locate(target, []Cache{x.cache}), others)
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
	placed := map[string][]Placed{}
	for _, in := range []pins.Install{nv, mac, full} {
		placed[in.Variant] = Locate(in, []Cache{x.cache})
	}
	u := DiskUsage([]pins.Install{nv, mac, full}, placed)
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
	if err := x.cache.Link("o/full", ucommitC, "codec.pth", BlobName(codec)); err != nil {
		t.Fatal(err)
	}
	r, _ := x.plan("full")
	if len(r.Kept) != 1 || r.Kept[0].Blob != x.cache.BlobPath("o/full", BlobName(codec)) || !strings.Contains(r.Kept[0].Why, "snapshot "+ucommitC) {
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
				if filepath.Base(p) == PinnedRef && strings.HasPrefix(ref, "drama-root-") {
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
	if exists(filepath.Join(in.Dir, pins.LockFileName)) || exists(x.cache.BlobPath("o/full", BlobName(fileOf("m", "full-weights")))) {
		t.Fatal("lock or blob left")
	}
}
