package mirrorcmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/realclient"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
	"github.com/drama-tts/drama/pins/hub/hubtest"
	"github.com/drama-tts/drama/pins/hub/mirror"
)

// The repository the real clients read: nested folders, small files and
// LFS files (by name and by size), names with spaces and non-ASCII
// letters, a main branch and an older commit.
const (
	confRepo    = "drama-org/conformance-model"
	confCommitA = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1" // main
	confCommitB = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2" // older, no branch
	confLFSMin  = 64 << 10
	confToken   = "hf_conformancetoken"
)

type confFile struct {
	data []byte
	lfs  bool
}

type confRepoFiles map[string]confFile

func confFixture(t *testing.T) (dir string, a, b confRepoFiles) {
	t.Helper()
	a = confRepoFiles{
		"config.json":                      {[]byte(`{"model_type":"drama","layers":2}`), false},
		"README.md":                        {[]byte("# conformance model\n"), false},
		"model.safetensors":                {hubtest.Bytes(1, 200<<10), true},
		"weights/shard 1.bin":              {hubtest.Bytes(2, 150<<10), true},
		"data/big.dat":                     {hubtest.Bytes(3, 80<<10), true}, // LFS by size
		"nested/deeper/tokenizer.json":     {[]byte(`{"vocab":{"a":0}}`), false},
		"nested/deeper/ünïcode naïve.txt":  {[]byte("naïve\n"), false},
		"nested/with space/notes file.txt": {[]byte("notes\n"), false},
	}
	b = confRepoFiles{
		"config.json":       {[]byte(`{"model_type":"drama","layers":1}`), false},
		"model.safetensors": {hubtest.Bytes(4, 100<<10), true},
		"nested/old.txt":    {[]byte("old\n"), false},
	}
	dir = t.TempDir()
	root := filepath.Join(dir, filepath.FromSlash(confRepo))
	for commit, files := range map[string]confRepoFiles{confCommitA: a, confCommitB: b} {
		for p, f := range files {
			fp := filepath.Join(root, commit, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(fp, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	os.MkdirAll(filepath.Join(root, "refs"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "refs", "main"), []byte(confCommitA+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, a, b
}

// startMirror runs drama mirror serve's code on loopback (main and CDN
// listeners) until the test ends and returns its endpoint; env are the
// variables it sees (name, value, ...).
func startMirror(t *testing.T, opts ServeOptions, env ...string) string {
	t.Helper()
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, env...)
	f.Global.Quiet = true
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	opts.F, opts.Addr = f, "127.0.0.1:0"
	opts.Ready = func(a string) { addrc <- a }
	go func() { done <- runServe(ctx, &opts) }()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		cancel()
		t.Fatalf("mirror: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("mirror stop: %v", err)
		}
	})
	return "http://" + addr
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func (fs confRepoFiles) paths() []string {
	var out []string
	for p := range fs {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// oid is the git blob sha1 the Hub gives a file: of the pointer for LFS.
func (f confFile) oid() string {
	if f.lfs {
		return mirror.GitBlobSHA1([]byte(mirror.LFSPointer(sha256Hex(f.data), int64(len(f.data)))))
	}
	return mirror.GitBlobSHA1(f.data)
}

// dirs lists the directories holding the files.
func (fs confRepoFiles) dirs() []string {
	seen := map[string]bool{}
	for p := range fs {
		for d := filepath.ToSlash(filepath.Dir(p)); d != "."; d = filepath.ToSlash(filepath.Dir(d)) {
			seen[d] = true
		}
	}
	var out []string
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

type confCheck struct {
	OK    bool            `json:"ok"`
	Error string          `json:"error"`
	Value json.RawMessage `json:"value"`
}

type confResults struct {
	Files  []string             `json:"files"`
	Checks map[string]confCheck `json:"checks"`
}

// runClient runs a conformance program against the endpoint and returns
// its results, failing the test on every check that did not pass.
func runClient(t *testing.T, c *realclient.Client, program, endpoint, tokenEndpoint string) (confResults, string) {
	t.Helper()
	work := t.TempDir()
	out := filepath.Join(work, "results.json")
	res := c.Run(context.Background(), 4*time.Minute, []string{"HF_HOME=" + filepath.Join(work, "hf-home")}, program,
		endpoint, confRepo, confCommitB, out, work, confToken, tokenEndpoint)
	if res.Err != nil {
		t.Fatalf("%v\nstdout: %s", res.Err, res.Stdout)
	}
	if s := strings.TrimSpace(res.Stderr); s != "" {
		t.Logf("%s %s wrote to stderr:\n%s", c.Name, program, s)
	}
	var r confResults
	data, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil || len(r.Checks) == 0 {
		t.Fatalf("%s: no results (%v)\nstderr: %s", program, err, res.Stderr)
	}
	names := make([]string, 0, len(r.Checks))
	for name := range r.Checks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if ch := r.Checks[name]; !ch.OK {
			t.Errorf("%s %s failed:\n%s", c.Name, name, ch.Error)
		}
	}
	return r, work
}

// value decodes a passed check's value; false when it failed or is absent.
func value(t *testing.T, r confResults, name string, v any) bool {
	t.Helper()
	ch, ok := r.Checks[name]
	if !ok {
		t.Errorf("check %s did not run", name)
		return false
	}
	if !ch.OK {
		return false
	}
	if err := json.Unmarshal(ch.Value, v); err != nil {
		t.Errorf("%s: value %s: %v", name, ch.Value, err)
		return false
	}
	return true
}

func wantBool(t *testing.T, r confResults, name string, want bool) {
	t.Helper()
	var got bool
	if value(t, r, name, &got) && got != want {
		t.Errorf("%s: want %v, got %v", name, want, got)
	}
}

// wantFile checks that the file at a reported path holds the bytes of f.
func wantFile(t *testing.T, what, path string, f confFile) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if got, want := sha256Hex(data), sha256Hex(f.data); got != want {
		t.Errorf("%s: %s: sha256 %s, want %s", what, path, got, want)
	}
}

// wantSnapshot checks that a snapshot folder holds exactly the files.
func wantSnapshot(t *testing.T, what, dir string, files confRepoFiles) {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = sha256Hex(data)
		return nil
	})
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	for p, f := range files {
		if got[p] != sha256Hex(f.data) {
			t.Errorf("%s: %s: sha256 %q, want %s", what, p, got[p], sha256Hex(f.data))
		}
		delete(got, p)
	}
	for p := range got {
		t.Errorf("%s: unexpected file %s", what, p)
	}
}

type treeItem struct {
	Path       string  `json:"path"`
	Type       string  `json:"type"`
	OID        string  `json:"oid"`
	Size       int64   `json:"size"`
	LFS        *string `json:"lfs"`
	LastCommit *string `json:"last_commit"`
}

// wantTree checks a listing against the files and directories it should
// name (all of them, or those at the top with top set).
func wantTree(t *testing.T, what string, got []treeItem, files confRepoFiles, top bool) {
	t.Helper()
	want := map[string]string{}
	for _, p := range files.paths() {
		if !top || !strings.Contains(p, "/") {
			want[p] = "file"
		}
	}
	for _, d := range files.dirs() {
		if !top || !strings.Contains(d, "/") {
			want[d] = "directory"
		}
	}
	for _, e := range got {
		typ, ok := want[e.Path]
		delete(want, e.Path)
		switch {
		case !ok:
			t.Errorf("%s: unexpected entry %+v", what, e)
		case typ != e.Type:
			t.Errorf("%s: %s: type %q, want %q", what, e.Path, e.Type, typ)
		case typ == "directory" && len(e.OID) != 40:
			t.Errorf("%s: directory %s: oid %q, want a git tree sha1", what, e.Path, e.OID)
		case typ == "file":
			f := files[e.Path]
			if e.OID != f.oid() {
				t.Errorf("%s: %s: oid %s, want %s", what, e.Path, e.OID, f.oid())
			}
			if f.lfs != (e.LFS != nil) || (e.LFS != nil && *e.LFS != sha256Hex(f.data)) {
				t.Errorf("%s: %s: lfs %v, want lfs=%v sha256 %s", what, e.Path, e.LFS, f.lfs, sha256Hex(f.data))
			}
		}
	}
	for p := range want {
		t.Errorf("%s: missing %s", what, p)
	}
}

// confMirrors serves the conformance fixture's repositories, a and b,
// from two mirrors over one folder: one open, one that wants confToken.
func confMirrors(t *testing.T) (a, b confRepoFiles, endpoint, tokenEndpoint string) {
	t.Helper()
	dir, a, b := confFixture(t)
	opts := ServeOptions{Dir: dir, LFSMinSize: confLFSMin, PageSize: 4, URLTTL: time.Hour}
	endpoint = startMirror(t, opts)
	opts.Token = confToken
	return a, b, endpoint, startMirror(t, opts)
}

// huggingface_hub, the Python client, against drama mirror serve.
func TestConformanceHuggingFaceHub(t *testing.T) {
	py := realclient.Python(t)
	a, b, endpoint, tokenEndpoint := confMirrors(t)
	r, _ := runClient(t, py, "scripts/conformance/hf_mirror.py", endpoint, tokenEndpoint)
	checkHuggingFaceHub(t, r, a, b)
}

// huggingface_hub against drama mirror serve --cache: a Hugging Face cache
// that drama fetch filled, whose snapshot entries are links into blobs/,
// followed inside the cache.
func TestConformanceHuggingFaceHubCache(t *testing.T) {
	py := realclient.Python(t)
	dir, a, b := confFixture(t)
	src := startMirror(t, ServeOptions{Dir: dir, LFSMinSize: confLFSMin, PageSize: 4, URLTTL: time.Hour})
	cacheDir := t.TempDir()
	cache := hub.Cache{Dir: cacheDir}
	fetcher := &hub.Fetcher{Client: hub.New(src, "", 4), Cache: cache, Download: hub.DownloadOptions{Workers: 4, ChunkSize: 32 << 10}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for commit, files := range map[string]confRepoFiles{confCommitA: a, confCommitB: b} {
		var pf []pins.File
		for _, p := range files.paths() {
			f := files[p]
			pf = append(pf, pins.File{Path: p, Size: int64(len(f.data)), SHA256: sha256Hex(f.data), LFS: f.lfs})
		}
		if _, err := fetcher.Fetch(ctx, confRepo, commit, pf); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(cache.SnapshotPath(confRepo, commit, "config.json")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the cache should hold snapshot links into blobs/: %v %v", fi, err)
		}
	}
	// the refs of a cache huggingface_hub filled: main alone
	if err := os.RemoveAll(filepath.Join(cache.RepoDir(confRepo), "refs")); err != nil {
		t.Fatal(err)
	}
	if err := cache.WriteRef(confRepo, "main", confCommitA); err != nil {
		t.Fatal(err)
	}
	opts := ServeOptions{Cache: true, LFSMinSize: confLFSMin, PageSize: 4, URLTTL: time.Hour}
	endpoint := startMirror(t, opts, "HF_HUB_CACHE", cacheDir)
	opts.Token = confToken
	tokenEndpoint := startMirror(t, opts, "HF_HUB_CACHE", cacheDir)
	r, _ := runClient(t, py, "scripts/conformance/hf_mirror.py", endpoint, tokenEndpoint)
	checkHuggingFaceHub(t, r, a, b)
}

// checkHuggingFaceHub checks hf_mirror.py's results against the fixture's
// two commits.
func checkHuggingFaceHub(t *testing.T, r confResults, a, b confRepoFiles) {
	t.Helper()
	if !slices.Equal(r.Files, a.paths()) {
		t.Errorf("list_repo_files: got %q, want %q", r.Files, a.paths())
	}
	for _, mode := range []string{"token", "anon"} {
		for _, p := range a.paths() {
			name := "hf_hub_download[" + mode + "]" + p
			var path string
			if value(t, r, name, &path) {
				wantFile(t, name, path, a[p])
			}
		}
	}
	var path string
	if value(t, r, "hf_hub_download[commit]", &path) {
		wantFile(t, "hf_hub_download[commit]", path, b["config.json"])
	}
	if value(t, r, "snapshot_download[main]", &path) {
		if filepath.Base(path) != confCommitA {
			t.Errorf("snapshot_download[main]: folder %s, want snapshots/%s", path, confCommitA)
		}
		wantSnapshot(t, "snapshot_download[main]", path, a)
	}
	if value(t, r, "snapshot_download[commit]", &path) {
		wantSnapshot(t, "snapshot_download[commit]", path, b)
	}
	var tree []treeItem
	if value(t, r, "list_repo_tree", &tree) {
		wantTree(t, "list_repo_tree", tree, a, false)
	}
	if value(t, r, "list_repo_tree[top]", &tree) {
		wantTree(t, "list_repo_tree[top]", tree, a, true)
	}
	var names []string
	if value(t, r, "list_repo_files", &names) && !slices.Equal(names, a.paths()) {
		t.Errorf("list_repo_files: got %q", names)
	}
	if value(t, r, "list_repo_files[commit]", &names) && !slices.Equal(names, b.paths()) {
		t.Errorf("list_repo_files[commit]: got %q, want %q", names, b.paths())
	}
	type info struct {
		ID       string `json:"id"`
		SHA      string `json:"sha"`
		Siblings []struct {
			RFilename string  `json:"rfilename"`
			Size      *int64  `json:"size"`
			BlobID    *string `json:"blob_id"`
			LFS       *string `json:"lfs"`
		} `json:"siblings"`
	}
	var mi info
	if value(t, r, "model_info", &mi) && (mi.ID != confRepo || mi.SHA != confCommitA || len(mi.Siblings) != len(a)) {
		t.Errorf("model_info: %+v", mi)
	}
	if value(t, r, "model_info[commit,files_metadata]", &mi) {
		if mi.SHA != confCommitB || len(mi.Siblings) != len(b) {
			t.Errorf("model_info[commit]: %+v", mi)
		}
		for _, s := range mi.Siblings {
			f := b[s.RFilename]
			if s.Size == nil || *s.Size != int64(len(f.data)) || s.BlobID == nil || *s.BlobID != f.oid() || (s.LFS != nil) != f.lfs {
				t.Errorf("model_info[commit]: sibling %+v", s)
			}
		}
	}
	wantBool(t, r, "repo_exists[token]", true)
	wantBool(t, r, "repo_exists[token,without]", false)
	wantBool(t, r, "repo_exists[true]", true)
	wantBool(t, r, "repo_exists[false]", false)
	wantBool(t, r, "file_exists[true]", true)
	wantBool(t, r, "file_exists[true,lfs]", true)
	wantBool(t, r, "file_exists[false]", false)
	wantBool(t, r, "file_exists[false,revision]", false)
	if value(t, r, "get_paths_info", &tree) {
		want := append([]string{"config.json", "nested"}, a.paths()...)
		var got []string
		for _, e := range tree {
			got = append(got, e.Path)
			if e.LastCommit == nil || *e.LastCommit != confCommitA {
				t.Errorf("get_paths_info: %s: last commit %v, want %s", e.Path, e.LastCommit, confCommitA)
			}
			if e.Type == "file" && e.OID != a[e.Path].oid() {
				t.Errorf("get_paths_info: %s: oid %s, want %s", e.Path, e.OID, a[e.Path].oid())
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("get_paths_info: paths %q, want %q", got, want)
		}
	}
	var refs []map[string]string
	if value(t, r, "list_repo_refs", &refs) && (len(refs) != 1 || refs[0]["name"] != "main" || refs[0]["target_commit"] != confCommitA) {
		t.Errorf("list_repo_refs: %v", refs)
	}
	if value(t, r, "list_repo_commits", &names) && !slices.Equal(names, []string{confCommitA}) {
		t.Errorf("list_repo_commits: %q", names)
	}
}

// @huggingface/hub, the JavaScript client, against drama mirror serve,
// without and with a token.
func TestConformanceHuggingFaceJS(t *testing.T) {
	node := realclient.Node(t, "@huggingface/hub")
	a, b, endpoint, tokenEndpoint := confMirrors(t)
	r, _ := runClient(t, node, "scripts/conformance/hfjs_mirror.mjs", endpoint, tokenEndpoint)

	if !slices.Equal(r.Files, a.paths()) {
		t.Errorf("listFiles: files %q, want %q", r.Files, a.paths())
	}
	wantBool(t, r, "repoExists[token,without]", false)
	for _, mode := range []string{"anon", "token"} {
		for _, p := range a.paths() {
			name := "downloadFile[" + mode + "]" + p
			var sum, path string
			if value(t, r, name, &sum) && sum != sha256Hex(a[p].data) {
				t.Errorf("%s: sha256 %s, want %s", name, sum, sha256Hex(a[p].data))
			}
			name = "downloadFileToCacheDir[" + mode + "]" + p
			if value(t, r, name, &path) {
				wantFile(t, name, path, a[p])
			}
		}
		var missing any = "unset"
		if value(t, r, "downloadFile["+mode+",missing]", &missing) && missing != nil {
			t.Errorf("downloadFile of a missing file: want null, got %v", missing)
		}
		var path string
		if name := "snapshotDownload[" + mode + ",main]"; value(t, r, name, &path) {
			wantSnapshot(t, name, path, a)
		}
		if name := "snapshotDownload[" + mode + ",commit]"; value(t, r, name, &path) {
			if filepath.Base(path) != confCommitB {
				t.Errorf("%s: folder %s, want snapshots/%s", name, path, confCommitB)
			}
			wantSnapshot(t, name, path, b)
		}
		var tree []treeItem
		if name := "listFiles[" + mode + "]"; value(t, r, name, &tree) {
			wantTree(t, name, tree, a, false)
		}
		if name := "listFiles[" + mode + ",top]"; value(t, r, name, &tree) {
			for _, e := range tree {
				if e.Type == "directory" && len(e.OID) != 40 {
					t.Errorf("%s: %s: oid %q", name, e.Path, e.OID)
				}
			}
			if len(tree) != 6 { // 3 files, 3 folders at the top
				t.Errorf("%s: want 6 entries, got %+v", name, tree)
			}
		}
		var mi struct {
			Name      string   `json:"name"`
			SHA       string   `json:"sha"`
			FilePaths []string `json:"filePaths"`
		}
		if name := "modelInfo[" + mode + "]"; value(t, r, name, &mi) {
			sort.Strings(mi.FilePaths)
			if mi.Name != confRepo || mi.SHA != confCommitA || !slices.Equal(mi.FilePaths, a.paths()) {
				t.Errorf("%s: %+v", name, mi)
			}
		}
		var sha string
		if name := "modelInfo[" + mode + ",commit]"; value(t, r, name, &sha) && sha != confCommitB {
			t.Errorf("%s: sha %s, want %s", name, sha, confCommitB)
		}
		wantBool(t, r, "fileExists["+mode+",true]", true)
		wantBool(t, r, "fileExists["+mode+",true,lfs]", true)
		wantBool(t, r, "fileExists["+mode+",false]", false)
		wantBool(t, r, "repoExists["+mode+",true]", true)
		wantBool(t, r, "repoExists["+mode+",false]", false)
		var infos []struct {
			Path       string  `json:"path"`
			Type       string  `json:"type"`
			OID        string  `json:"oid"`
			LFS        *string `json:"lfs"`
			LastCommit *string `json:"lastCommit"`
		}
		if name := "pathsInfo[" + mode + "]"; value(t, r, name, &infos) {
			want := append([]string{"config.json", "nested"}, a.paths()...)
			var got []string
			for _, e := range infos {
				got = append(got, e.Path)
				if e.LastCommit == nil || *e.LastCommit != confCommitA || len(e.OID) != 40 {
					t.Errorf("%s: %+v", name, e)
				}
				if f, ok := a[e.Path]; ok && (e.OID != f.oid() || (e.LFS != nil) != f.lfs) {
					t.Errorf("%s: %s: oid %s lfs %v, want %s lfs=%v", name, e.Path, e.OID, e.LFS, f.oid(), f.lfs)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: paths %q, want %q", name, got, want)
			}
		}
	}
}

// drama's own fetch follows the redirect to the CDN listener of a mirror
// that requires a token, and verifies every byte.
func TestFetchThroughCDNListener(t *testing.T) {
	dir, a, _ := confFixture(t)
	endpoint := startMirror(t, ServeOptions{Dir: dir, LFSMinSize: confLFSMin, PageSize: 4, URLTTL: time.Hour, Token: confToken})
	var files []pins.File
	for _, p := range a.paths() {
		f := a[p]
		pf := pins.File{Path: p, Size: int64(len(f.data)), SHA256: sha256Hex(f.data), LFS: f.lfs}
		if !f.lfs {
			pf.GitSHA1 = mirror.GitBlobSHA1(f.data)
		}
		files = append(files, pf)
	}
	cache := hub.Cache{Dir: t.TempDir()}
	fetcher := &hub.Fetcher{Client: hub.New(endpoint, confToken, 4), Cache: cache, Download: hub.DownloadOptions{Workers: 4, ChunkSize: 32 << 10}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := fetcher.Fetch(ctx, confRepo, confCommitA, files); err != nil {
		t.Fatal(err)
	}
	for _, p := range a.paths() {
		wantFile(t, "drama fetch", cache.SnapshotPath(confRepo, confCommitA, p), a[p])
	}
}

// --fault applies to the CDN listener's data responses too.
func TestFaultOnCDNListener(t *testing.T) {
	dir, a, _ := confFixture(t)
	endpoint := startMirror(t, ServeOptions{Dir: dir, LFSMinSize: confLFSMin, PageSize: 4, URLTTL: time.Hour,
		Faults: []mirror.Fault{{Kind: mirror.FaultExpire, Times: 1}}})
	get := func() (int, []byte) {
		resp, err := http.Get(endpoint + "/" + confRepo + "/resolve/main/model.safetensors")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !strings.HasPrefix(resp.Request.URL.String(), "http://127.0.0.1:") || resp.Request.URL.Host == strings.TrimPrefix(endpoint, "http://") {
			t.Errorf("the redirect should leave %s for the CDN listener, ended at %s", endpoint, resp.Request.URL)
		}
		return resp.StatusCode, b
	}
	if st, _ := get(); st != 403 {
		t.Errorf("first GET under --fault expire: want 403, got %d", st)
	}
	if st, b := get(); st != 200 || sha256Hex(b) != sha256Hex(a["model.safetensors"].data) {
		t.Errorf("second GET: want the file, got %d, %d bytes", st, len(b))
	}
}
