package fetchcmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/realclient"
	"github.com/drama-tts/drama/pins"
)

// sums maps each file of the test repository to its sha256.
func (e *testEnv) sums() map[string]string {
	m := map[string]string{}
	for name, b := range e.files {
		s := sha256.Sum256(b)
		m[name] = hex.EncodeToString(s[:])
	}
	return m
}

// fetchWithMainRef fetches the test repository whose main branch is the
// pinned commit.
func fetchWithMainRef(t *testing.T) *testEnv {
	t.Helper()
	e := newTestEnv(t, true)
	refs := filepath.Join(e.dir, "mirror", "fishaudio", "drama-3", "refs")
	if err := os.MkdirAll(refs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(refs, "main"), []byte(testCommit), 0o644); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestHFHubReadsDramaCacheOffline: huggingface_hub, offline, finds a
// cache written by drama fetch complete: snapshot_download of the commit,
// of main and of drama's own ref, hf_hub_download of every file, and
// scan_cache_dir without a warning.
func TestHFHubReadsDramaCacheOffline(t *testing.T) {
	py := realclient.Python(t)
	e := fetchWithMainRef(t)
	r := py.Run(context.Background(), 2*time.Minute, []string{"HF_HUB_OFFLINE=1", "HF_HUB_CACHE=" + e.cache},
		"scripts/conformance/hf_cache_read.py", e.cache, "fishaudio/drama-3", testCommit, "main", "drama-pinned")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	var got struct {
		Snapshot  string            `json:"snapshot"`
		Files     map[string]string `json:"files"`
		Revisions map[string]string `json:"revisions"`
		Downloads map[string]string `json:"downloads"`
		Warnings  []string          `json:"warnings"`
		Refs      []string          `json:"refs"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	want := e.sums()
	if !maps.Equal(got.Files, want) || !maps.Equal(got.Downloads, want) {
		t.Errorf("files: want %v\n got snapshot %v\n and downloads %v", want, got.Files, got.Downloads)
	}
	for rev, dir := range got.Revisions {
		if dir != got.Snapshot {
			t.Errorf("revision %s: want %s, got %s", rev, got.Snapshot, dir)
		}
	}
	if len(got.Warnings) > 0 {
		t.Errorf("scan_cache_dir warnings: %v", got.Warnings)
	}
	if !slices.Contains(got.Refs, "main") || !slices.Contains(got.Refs, "drama-pinned") {
		t.Errorf("refs: want main and drama-pinned, got %v", got.Refs)
	}
	if r.Stderr != "" {
		t.Logf("huggingface_hub said:\n%s", r.Stderr)
	}
}

// TestHFJSReadsDramaCache: @huggingface/hub takes every file of a cache
// written by drama fetch from the cache (its Hub address refuses
// connections), and scanCacheDir finds nothing wrong.
func TestHFJSReadsDramaCache(t *testing.T) {
	node := realclient.Node(t, "@huggingface/hub")
	e := fetchWithMainRef(t)
	paths := slices.Sorted(maps.Keys(e.files))
	r := node.Run(context.Background(), 2*time.Minute, []string{"DEAD_HUB_URL=http://" + closedAddr(t)},
		"scripts/conformance/hf_cache_read.mjs", append([]string{e.cache, "fishaudio/drama-3", testCommit}, paths...)...)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	var got struct {
		Files    map[string]string `json:"files"`
		Warnings []string          `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	if want := e.sums(); !maps.Equal(got.Files, want) {
		t.Errorf("files: want %v, got %v", want, got.Files)
	}
	if len(got.Warnings) > 0 {
		t.Errorf("scanCacheDir warnings: %v", got.Warnings)
	}
}

// pinGitSHA1 rewrites the test's complete pins with each small file's git
// blob sha1, the name the Hub's clients give its blob.
func (e *testEnv) pinGitSHA1(t *testing.T) {
	t.Helper()
	p, err := pins.ReadFile(e.pinsPath)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range p.Files {
		if !f.LFS {
			p.Files[i].GitSHA1 = gitSHA1(e.files[f.Path])
		}
	}
	if err := p.WriteFile(e.pinsPath); err != nil {
		t.Fatal(err)
	}
}

// fetchOverClientCache runs drama fetch on a cache a real client filled
// and checks that no byte of file data was asked for.
func fetchOverClientCache(t *testing.T, e *testEnv) {
	t.Helper()
	before := e.srv.Stats()
	ios, _, _, errOut := cmdtest.IOStreams()
	if err := runFetch(context.Background(), e.opts(e.factory(ios))); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	e.checkVariantDir(t, true)
	after := e.srv.Stats()
	if after.BytesServed != before.BytesServed || after.DataRequests != before.DataRequests || after.HeadRequests != before.HeadRequests {
		t.Errorf("drama fetch asked for file data: %d bytes, %d data requests, %d HEADs",
			after.BytesServed-before.BytesServed, after.DataRequests-before.DataRequests, after.HeadRequests-before.HeadRequests)
	}
	for name := range e.files {
		if !strings.Contains(errOut.String(), "present: "+name) {
			t.Errorf("%s: not taken from the cache:\n%s", name, errOut)
		}
	}
}

// TestDramaReusesHFHubCache: after huggingface_hub downloaded every file
// into the cache, drama fetch asks for no file data.
func TestDramaReusesHFHubCache(t *testing.T) {
	py := realclient.Python(t)
	e := newTestEnv(t, true)
	e.pinGitSHA1(t)
	hub := newStandIn(t, "fishaudio/drama-3", testCommit, e.files, int(e.srv.LFSMinSize))
	paths := slices.Sorted(maps.Keys(e.files))
	r := py.Run(context.Background(), 2*time.Minute, []string{"HF_ENDPOINT=" + hub.hub.URL, "HF_HUB_CACHE=" + e.cache},
		"scripts/conformance/hf_cache_write.py", append([]string{e.cache, "fishaudio/drama-3", testCommit}, paths...)...)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	fetchOverClientCache(t, e)
	// What drama added leaves the cache whole for huggingface_hub.
	r = py.Run(context.Background(), 2*time.Minute, []string{"HF_HUB_OFFLINE=1", "HF_HUB_CACHE=" + e.cache},
		"scripts/conformance/hf_cache_read.py", e.cache, "fishaudio/drama-3", testCommit, "drama-pinned")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if !strings.Contains(r.Stdout, `"warnings": []`) {
		t.Errorf("scan_cache_dir after drama fetch: %s", r.Stdout)
	}
}

// TestDramaReusesHFJSCache: after @huggingface/hub downloaded every file
// into the cache, drama fetch asks for no file data.
func TestDramaReusesHFJSCache(t *testing.T) {
	node := realclient.Node(t, "@huggingface/hub")
	e := newTestEnv(t, true)
	e.pinGitSHA1(t)
	hub := newStandIn(t, "fishaudio/drama-3", testCommit, e.files, int(e.srv.LFSMinSize))
	paths := slices.Sorted(maps.Keys(e.files))
	r := node.Run(context.Background(), 2*time.Minute, nil,
		"scripts/conformance/hf_cache_write.mjs", append([]string{hub.hub.URL, e.cache, "fishaudio/drama-3", testCommit}, paths...)...)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	fetchOverClientCache(t, e)
}

// TestFetchFromStandIn: drama fetch against a Hub that is not drama's
// mirror (LFS files redirected to a CDN host, no tree route), whose
// small-file route ignores Range and answers 200 with the whole file, and
// whose CDN answers each range with at most 100 KiB, starting a few bytes
// early: all of it allowed by HTTP.
func TestFetchFromStandIn(t *testing.T) {
	e := newTestEnv(t, true)
	e.pinGitSHA1(t)
	hub := newStandIn(t, "fishaudio/drama-3", testCommit, e.files, int(e.srv.LFSMinSize))
	hub.wholeSmall, hub.rangeCap = true, 100<<10
	ios, _, _, errOut := cmdtest.IOStreams()
	o := e.opts(e.factory(ios))
	o.Endpoint = hub.hub.URL
	if err := runFetch(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	e.checkVariantDir(t, true)
}
