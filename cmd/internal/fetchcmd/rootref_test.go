package fetchcmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/realclient"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
	"github.com/drama-tts/drama/pins/hub/hubtest"
)

// Two roots fetching one commit into one cache each leave their own ref,
// so removing the install of one keeps every blob the other links to.
func TestFetchWritesARefPerRootThatRemovalHonours(t *testing.T) {
	e, roots, cache := fetchIntoTwoRoots(t)
	for _, ref := range []string{hub.PinnedRef, hub.RootRef(roots[0]), hub.RootRef(roots[1])} {
		if c, err := hubtest.ReadRef(cache, "fishaudio/drama-3", ref); err != nil || c != testCommit {
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
	if _, err := hubtest.ReadRef(cache, "fishaudio/drama-3", hub.RootRef(roots[0])); !os.IsNotExist(err) {
		t.Fatalf("root a's ref is left: %v", err)
	}
}

// huggingface_hub reads the cache drama rm leaves: after one root's install
// goes, the other's snapshot still resolves offline at drama-pinned; after
// the last goes, the repository is gone and the scan has no warnings.
func TestRemovalLeavesACacheHuggingFaceHubReads(t *testing.T) {
	py := realclient.Python(t)
	e, roots, cache := fetchIntoTwoRoots(t)
	remove := func(root string) {
		installs, err := pins.Installed(root)
		if err != nil || len(installs) != 1 {
			t.Fatalf("installs %v %v", installs, err)
		}
		plan, err := hub.PlanRemoval(root, installs[0], hub.Locate(installs[0], []hub.Cache{cache}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := plan.Apply(installs[0].Dir); err != nil {
			t.Fatal(err)
		}
	}
	type scan struct {
		Repos []struct {
			RepoID    string              `json:"repo_id"`
			Refs      []string            `json:"refs"`
			Revisions map[string][]string `json:"revisions"`
		} `json:"repos"`
		Warnings      []string `json:"warnings"`
		Resolved      *string  `json:"resolved"`
		ResolvedError string   `json:"resolved_error"`
	}
	run := func() scan {
		res := py.Run(context.Background(), time.Minute, nil, "scripts/conformance/hf_cache_scan.py", e.cache, "fishaudio/drama-3", "codec.pth")
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		var s scan
		if err := json.Unmarshal([]byte(res.Stdout), &s); err != nil {
			t.Fatalf("%v\n%s", err, res.Stdout)
		}
		return s
	}
	remove(roots[0])
	s := run()
	if len(s.Warnings) != 0 || len(s.Repos) != 1 || len(s.Repos[0].Revisions[testCommit]) != len(e.files) ||
		strings.Join(s.Repos[0].Refs, ",") != hub.PinnedRef+","+hub.RootRef(roots[1]) {
		t.Fatalf("after removing root a: %+v", s)
	}
	if s.Resolved == nil {
		t.Fatalf("codec.pth does not resolve offline at drama-pinned: %s", s.ResolvedError)
	}
	if got, err := os.ReadFile(*s.Resolved); err != nil || string(got) != string(e.files["codec.pth"]) {
		t.Fatalf("resolved %s: %v", *s.Resolved, err)
	}
	remove(roots[1])
	s = run()
	if len(s.Warnings) != 0 || len(s.Repos) != 0 || s.Resolved != nil {
		t.Fatalf("after removing both: %+v", s)
	}
}

// fetchIntoTwoRoots fetches the test pins into two roots, a and b, that
// share one cache, and returns the environment, the roots and the cache.
func fetchIntoTwoRoots(t *testing.T) (*testEnv, []string, hub.Cache) {
	t.Helper()
	e := newTestEnv(t, true)
	roots := []string{filepath.Join(e.dir, "a"), filepath.Join(e.dir, "b")}
	for _, root := range roots {
		ios, _, _, errOut := cmdtest.IOStreams()
		f := e.factory(ios)
		f.Global.Root = root
		if err := runFetch(context.Background(), e.opts(f)); err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
	}
	return e, roots, hub.Cache{Dir: e.cache}
}
