package mirror

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// followLikeHuggingFaceHub does what huggingface_hub's metadata call does:
// a HEAD that follows a redirect to the same host name itself, keeping its
// headers (Authorization included), and reads the last answer.
func followLikeHuggingFaceHub(t *testing.T, u string, hdr ...string) *http.Response {
	t.Helper()
	for range 5 {
		resp, _ := do(t, noRedirect(), "HEAD", u, hdr...)
		loc := resp.Header.Get("Location")
		if resp.StatusCode/100 != 3 || loc == "" {
			return resp
		}
		from, _ := url.Parse(u)
		to, _ := from.Parse(loc)
		if to.Hostname() != from.Hostname() {
			return resp
		}
		u = to.String()
	}
	t.Fatalf("%s: too many redirects", u)
	return nil
}

// An LFS file's identity must reach a client whichever answer it reads:
// the 302 of the resolve, or the CDN's after following it, with or
// without the token it kept on the way.
func TestLFSIdentityAfterRedirect(t *testing.T) {
	s, ts, files := newRepo(t)
	want := `"` + sha(files["model.safetensors"]) + `"`
	u := ts.URL + "/org/model/resolve/main/model.safetensors"

	resp := followLikeHuggingFaceHub(t, u, "Authorization", "Bearer hf_any")
	if resp.StatusCode != 200 || resp.Header.Get("X-Repo-Commit") != testCommit || resp.Header.Get("ETag") != want || resp.Header.Get("Content-Length") != "100000" {
		t.Errorf("HEAD followed to the CDN with the token: got %d X-Repo-Commit %q ETag %q Content-Length %q",
			resp.StatusCode, resp.Header.Get("X-Repo-Commit"), resp.Header.Get("ETag"), resp.Header.Get("Content-Length"))
	}
	// @huggingface/hub: a GET of bytes 0-0 through the redirect, reading
	// ETag and Content-Range from the final answer
	resp, body := do(t, http.DefaultClient, "GET", u, "Range", "bytes=0-0", "Authorization", "Bearer hf_any")
	if resp.StatusCode != 206 || resp.Header.Get("ETag") != want || resp.Header.Get("Content-Range") != "bytes 0-0/100000" || string(body) != "0" {
		t.Errorf("ranged GET through the redirect: got %d ETag %q Content-Range %q body %q",
			resp.StatusCode, resp.Header.Get("ETag"), resp.Header.Get("Content-Range"), body)
	}
	if n := s.Stats().CDNAuthorized; n != 2 {
		t.Errorf("CDNAuthorized: want the 2 requests that kept the token counted, got %d", n)
	}
}

// With a CDN listener the redirect leaves the mirror's origin, and the
// CDN answers on its own port without a token.
func TestCDNListener(t *testing.T) {
	s, ts, files := newRepo(t)
	s.Token = "hf_secret"
	cdn := httptest.NewServer(s.CDN())
	t.Cleanup(cdn.Close)
	s.CDNURL = cdn.URL
	resp, _ := do(t, noRedirect(), "HEAD", ts.URL+"/org/model/resolve/main/model.safetensors", "Authorization", "Bearer hf_secret")
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 302 || !strings.HasPrefix(loc, cdn.URL+"/cdn/org/model/"+testCommit+"/model.safetensors?") {
		t.Fatalf("resolve: want a 302 to %s, got %d %q", cdn.URL, resp.StatusCode, loc)
	}
	if resp.Header.Get("X-Repo-Commit") != testCommit || resp.Header.Get("X-Linked-Etag") != `"`+sha(files["model.safetensors"])+`"` || resp.Header.Get("X-Linked-Size") != "100000" {
		t.Errorf("302 headers: %v", resp.Header)
	}
	resp, body := do(t, http.DefaultClient, "GET", loc)
	if resp.StatusCode != 200 || sha(body) != sha(files["model.safetensors"]) {
		t.Errorf("CDN GET without a token: got %d, %d bytes", resp.StatusCode, len(body))
	}
	if r, _ := do(t, http.DefaultClient, "GET", cdn.URL+"/api/models/org/model/revision/main"); r.StatusCode != 404 {
		t.Errorf("the CDN listener serves only /cdn: got %d for an API route", r.StatusCode)
	}
	if r, _ := do(t, http.DefaultClient, "GET", strings.Replace(loc, "sig=", "sig=0", 1)); r.StatusCode != 403 {
		t.Errorf("bad signature on the CDN listener: want 403, got %d", r.StatusCode)
	}
	// a CDNURL on all interfaces takes the host name of the request
	s.CDNURL = "http://0.0.0.0:" + strings.Split(cdn.URL, ":")[2]
	resp, _ = do(t, noRedirect(), "HEAD", ts.URL+"/org/model/resolve/main/model.safetensors", "Authorization", "Bearer hf_secret")
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, cdn.URL+"/cdn/") {
		t.Errorf("unspecified CDN host: want %s, got %q", cdn.URL, loc)
	}
}

// Directory entries carry the git tree sha1 that git gives the same files
// (LFS files stored as their pointer files).
func TestTreeDirectoryOIDs(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not on PATH: cannot compute the reference tree ids")
	}
	_, ts, files := newRepo(t)
	work := t.TempDir()
	for p, b := range files {
		if isLFSName(p) {
			b = []byte(LFSPointer(sha(b), int64(len(b))))
		}
		fp := filepath.Join(work, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(fp), 0o755)
		os.WriteFile(fp, b, 0o644)
	}
	git := func(args ...string) string {
		out, err := exec.Command(gitBin, append([]string{"-C", work}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	root := git("write-tree")
	for _, q := range []string{"?recursive=true", ""} {
		_, body := do(t, http.DefaultClient, "GET", ts.URL+"/api/models/org/model/tree/main"+q)
		var raw []map[string]any
		if err := json.Unmarshal(body, &raw); err != nil {
			t.Fatal(err)
		}
		dirs := 0
		for _, e := range raw {
			if e["type"] != "directory" {
				continue
			}
			dirs++
			p, _ := e["path"].(string)
			if want := git("rev-parse", root+":"+p); e["oid"] != want || e["size"] != float64(0) {
				t.Errorf("tree%s: %s: want oid %s size 0, got %v", q, p, want, e)
			}
		}
		if dirs == 0 {
			t.Errorf("tree%s: no directory entries in %s", q, body)
		}
	}
	resp, err := http.PostForm(ts.URL+"/api/models/org/model/paths-info/main", url.Values{"paths": {"sub/dir", "sub"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var infos []TreeEntry
	if err := json.NewDecoder(resp.Body).Decode(&infos); err != nil || len(infos) != 2 {
		t.Fatalf("paths-info: %v %+v", err, infos)
	}
	for _, e := range infos {
		if want := git("rev-parse", root+":"+e.Path); e.OID != want || e.Type != "directory" {
			t.Errorf("paths-info: %s: want a directory with oid %s, got %+v", e.Path, want, e)
		}
	}
}

func TestHubRoutes(t *testing.T) {
	_, ts, files := newRepo(t)
	cfgOID := GitBlobSHA1(files["config.json"])
	lfsSHA := sha(files["model.safetensors"])
	post := func(ctype, body string) []TreeEntry {
		t.Helper()
		resp, err := http.Post(ts.URL+"/api/models/org/model/paths-info/main", ctype, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []TreeEntry
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("paths-info %s: %d %v", ctype, resp.StatusCode, err)
		}
		return out
	}
	for _, got := range [][]TreeEntry{
		post("application/x-www-form-urlencoded", "paths=config.json&paths=sub&paths=nope&paths=model.safetensors&expand=True"),
		post("application/json", `{"paths":["config.json","sub","nope","model.safetensors"],"expand":true}`),
	} {
		if len(got) != 3 || got[0].Path != "config.json" || got[0].OID != cfgOID || got[1].Type != "directory" || got[1].OID == "" ||
			got[2].LFS == nil || got[2].LFS.OID != lfsSHA || got[0].LastCommit == nil || got[0].LastCommit.ID != testCommit {
			t.Errorf("paths-info: %+v", got)
		}
	}
	if got := post("application/x-www-form-urlencoded", "paths=config.json"); len(got) != 1 || got[0].LastCommit != nil {
		t.Errorf("paths-info without expand: %+v", got)
	}

	for _, u := range []string{"/api/models/org/model", "/api/models/org/model?expand[]=likes", "/api/models/org/model/revision/HEAD"} {
		resp, body := do(t, http.DefaultClient, "GET", ts.URL+u)
		var info struct {
			ID, SHA  string
			Siblings []sibling
		}
		if err := json.Unmarshal(body, &info); err != nil || resp.StatusCode != 200 || info.SHA != testCommit || info.ID != "org/model" || len(info.Siblings) != 3 {
			t.Errorf("%s: %d %s", u, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, http.DefaultClient, "HEAD", ts.URL+"/org/model/resolve/HEAD/config.json"); resp.StatusCode != 200 || resp.Header.Get("X-Repo-Commit") != testCommit {
		t.Errorf("resolve at HEAD: %d %v", resp.StatusCode, resp.Header)
	}
	if _, body := do(t, http.DefaultClient, "GET", ts.URL+"/org/model/raw/main/model.safetensors"); string(body) != LFSPointer(lfsSHA, 100000) {
		t.Errorf("raw of an LFS file: want its pointer file, got %q", body)
	}
	if resp, body := do(t, noRedirect(), "GET", ts.URL+"/org/model/raw/"+testCommit+"/sub/dir/tok.json"); resp.StatusCode != 200 || string(body) != "tokens" {
		t.Errorf("raw of a small file: %d %q", resp.StatusCode, body)
	}
	_, body := do(t, http.DefaultClient, "GET", ts.URL+"/api/models/org/model/commits/main")
	var commits []struct {
		ID, Title, Message, Date string
		Authors                  []any
	}
	if err := json.Unmarshal(body, &commits); err != nil || len(commits) != 1 || commits[0].ID != testCommit || commits[0].Authors == nil || !strings.HasSuffix(commits[0].Date, "Z") {
		t.Errorf("commits: %v %s", err, body)
	}

	for _, c := range []struct{ method, path, code string }{
		{"GET", "/api/models/org/nope", "RepoNotFound"},
		{"GET", "/api/models/org/nope/revision/main", "RepoNotFound"},
		{"GET", "/api/models/org/model/revision/nobranch", "RevisionNotFound"},
		{"GET", "/api/models/org/model/commits/nobranch", "RevisionNotFound"},
		{"POST", "/api/models/org/model/paths-info/nobranch", "RevisionNotFound"},
		{"GET", "/api/models/org/model/tree/main/nodir", "EntryNotFound"},
		{"HEAD", "/org/model/raw/main/nope.txt", "EntryNotFound"},
		{"GET", "/org/model/resolve/main/nope.txt", "EntryNotFound"},
		{"GET", "/api/spaces/org/model", ""},
	} {
		resp, body := do(t, http.DefaultClient, c.method, ts.URL+c.path)
		var e struct{ Error string }
		if resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != c.code {
			t.Errorf("%s %s: want 404 %q, got %d %q", c.method, c.path, c.code, resp.StatusCode, resp.Header.Get("X-Error-Code"))
		}
		if c.method != "HEAD" && (json.Unmarshal(body, &e) != nil || e.Error == "") {
			t.Errorf("%s %s: want a JSON {\"error\": ...} body, got %q", c.method, c.path, body)
		}
	}
}

func TestConditionalAndRangeUnit(t *testing.T) {
	_, ts, files := newRepo(t)
	u := ts.URL + "/org/model/resolve/main/config.json"
	cfg := `"` + GitBlobSHA1(files["config.json"]) + `"`
	if resp, _ := do(t, http.DefaultClient, "GET", u, "If-None-Match", cfg); resp.StatusCode != 304 {
		t.Errorf("If-None-Match with the ETag: want 304, got %d", resp.StatusCode)
	}
	if resp, _ := do(t, http.DefaultClient, "GET", u, "If-None-Match", `"other"`); resp.StatusCode != 200 {
		t.Errorf("If-None-Match with another ETag: want 200, got %d", resp.StatusCode)
	}
	lfs := `"` + sha(files["model.safetensors"]) + `"`
	if resp, _ := do(t, http.DefaultClient, "GET", ts.URL+"/org/model/resolve/main/model.safetensors", "If-None-Match", lfs); resp.StatusCode != 304 {
		t.Errorf("If-None-Match with the sha256 through the redirect: want 304, got %d", resp.StatusCode)
	}
	for _, unit := range []string{"Bytes", "BYTES"} {
		resp, body := do(t, http.DefaultClient, "GET", u, "Range", unit+"=0-0")
		if resp.StatusCode != 206 || string(body) != "{" {
			t.Errorf("%s=0-0: want 206 %q, got %d %q", unit, "{", resp.StatusCode, body)
		}
	}
}
