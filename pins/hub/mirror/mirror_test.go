package mirror

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testCommit = "0123456789abcdef0123456789abcdef01234567"

// newRepo writes a repository with a big LFS file, a small git file and a
// nested file under dir and returns a mirror serving it.
func newRepo(t *testing.T) (*Server, *httptest.Server, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{
		"model.safetensors": bytes.Repeat([]byte("0123456789"), 10000),
		"config.json":       []byte(`{"a":1}`),
		"sub/dir/tok.json":  []byte("tokens"),
	}
	root := filepath.Join(dir, "org", "model", testCommit)
	for p, b := range files {
		fp := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fp, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "org", "model", "refs"), 0o755)
	os.WriteFile(filepath.Join(dir, "org", "model", "refs", "main"), []byte(testCommit+"\n"), 0o644)
	s := &Server{Source: DirSource{Dir: dir}}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts, files
}

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func do(t *testing.T, c *http.Client, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestResolveLFSRedirects(t *testing.T) {
	s, ts, files := newRepo(t)
	resp, _ := do(t, noRedirect(), "HEAD", ts.URL+"/org/model/resolve/main/model.safetensors")
	if resp.StatusCode != 302 {
		t.Fatalf("status: want 302, got %d", resp.StatusCode)
	}
	h := resp.Header
	if h.Get("X-Repo-Commit") != testCommit {
		t.Errorf("X-Repo-Commit: want %s, got %q", testCommit, h.Get("X-Repo-Commit"))
	}
	if want := `"` + sha(files["model.safetensors"]) + `"`; h.Get("X-Linked-Etag") != want {
		t.Errorf("X-Linked-Etag: want %s, got %s", want, h.Get("X-Linked-Etag"))
	}
	if h.Get("X-Linked-Size") != "100000" {
		t.Errorf("X-Linked-Size: want 100000, got %s", h.Get("X-Linked-Size"))
	}
	// the ETag of an LFS file is the git blob sha1 of its pointer file, as
	// the tree listing's oid
	if want := `"` + GitBlobSHA1([]byte(LFSPointer(sha(files["model.safetensors"]), 100000))) + `"`; h.Get("ETag") != want {
		t.Errorf("ETag: want %s, got %s", want, h.Get("ETag"))
	}
	loc := h.Get("Location")
	resp, body := do(t, http.DefaultClient, "GET", loc, "Range", "bytes=10-19")
	if resp.StatusCode != 206 || resp.Header.Get("Content-Range") != "bytes 10-19/100000" || string(body) != "0123456789" {
		t.Fatalf("range GET: got %d %q %q", resp.StatusCode, resp.Header.Get("Content-Range"), body)
	}
	resp, _ = do(t, http.DefaultClient, "GET", loc, "Authorization", "Bearer x")
	if resp.StatusCode != 206 && resp.StatusCode != 200 {
		t.Errorf("signed URL with Authorization: want it served (the token is ignored), got %d", resp.StatusCode)
	}
	if n := s.Stats().CDNAuthorized; n != 1 {
		t.Errorf("CDNAuthorized: want 1, got %d", n)
	}
	resp, _ = do(t, http.DefaultClient, "GET", strings.Replace(loc, "sig=", "sig=0", 1))
	if resp.StatusCode != 403 {
		t.Errorf("bad signature: want 403, got %d", resp.StatusCode)
	}
}

func TestResolveSmallFileDirect(t *testing.T) {
	_, ts, files := newRepo(t)
	resp, body := do(t, noRedirect(), "GET", ts.URL+"/org/model/resolve/"+testCommit+"/sub/dir/tok.json")
	if resp.StatusCode != 200 || string(body) != "tokens" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if want := `"` + GitBlobSHA1(files["sub/dir/tok.json"]) + `"`; resp.Header.Get("ETag") != want {
		t.Errorf("ETag: want %s, got %s", want, resp.Header.Get("ETag"))
	}
}

func TestRanges(t *testing.T) {
	_, ts, _ := newRepo(t)
	u := ts.URL + "/org/model/resolve/main/config.json" // 7 bytes
	for _, c := range []struct {
		rng, cr, body string
		status        int
	}{
		{"bytes=0-0", "bytes 0-0/7", "{", 206},
		{"bytes=2-", "bytes 2-6/7", `a":1}`, 206},
		{"bytes=-2", "bytes 5-6/7", "1}", 206},
		{"bytes=3-100", "bytes 3-6/7", `":1}`, 206},
		{"bytes=7-", "bytes */7", "", 416},
		{"bytes=0-1,3-4", "", `{"a":1}`, 200},
	} {
		resp, body := do(t, http.DefaultClient, "GET", u, "Range", c.rng)
		if resp.StatusCode != c.status || resp.Header.Get("Content-Range") != c.cr {
			t.Errorf("%s: want %d %q, got %d %q", c.rng, c.status, c.cr, resp.StatusCode, resp.Header.Get("Content-Range"))
		}
		if c.status != 416 && string(body) != c.body {
			t.Errorf("%s: body: want %q, got %q", c.rng, c.body, body)
		}
	}
}

func TestNotFoundCodes(t *testing.T) {
	_, ts, _ := newRepo(t)
	for _, c := range []struct{ path, code string }{
		{"/org/model/resolve/main/nope.txt", "EntryNotFound"},
		{"/org/model/resolve/nobranch/config.json", "RevisionNotFound"},
		{"/org/other/resolve/main/config.json", "RepoNotFound"},
	} {
		resp, _ := do(t, http.DefaultClient, "HEAD", ts.URL+c.path)
		if resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != c.code {
			t.Errorf("%s: want 404 %s, got %d %q", c.path, c.code, resp.StatusCode, resp.Header.Get("X-Error-Code"))
		}
	}
}

func TestTreePagination(t *testing.T) {
	s, ts, files := newRepo(t)
	s.PageSize = 2
	var all []TreeEntry
	next := ts.URL + "/api/models/org/model/tree/" + testCommit + "?recursive=true"
	pages := 0
	for next != "" {
		resp, body := do(t, http.DefaultClient, "GET", next)
		var page []TreeEntry
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		next = ""
		if l := resp.Header.Get("Link"); l != "" {
			next = strings.TrimPrefix(strings.Split(l, ">")[0], "<")
		}
		pages++
	}
	if pages != 3 {
		t.Errorf("pages: want 3, got %d", pages)
	}
	got := map[string]TreeEntry{}
	for _, e := range all {
		got[e.Path] = e
	}
	if len(all) != 5 || got["sub"].Type != "directory" || got["sub/dir"].Type != "directory" {
		t.Fatalf("entries: %+v", all)
	}
	m := got["model.safetensors"]
	if m.LFS == nil || m.LFS.OID != sha(files["model.safetensors"]) || m.LFS.Size != 100000 {
		t.Errorf("lfs entry: %+v", m)
	}
	if c := got["config.json"]; c.LFS != nil || c.OID != GitBlobSHA1(files["config.json"]) {
		t.Errorf("git entry: %+v", c)
	}
}

func TestRevisionAndRefs(t *testing.T) {
	_, ts, _ := newRepo(t)
	_, body := do(t, http.DefaultClient, "GET", ts.URL+"/api/models/org/model/revision/main?blobs=true")
	var rev struct {
		SHA      string    `json:"sha"`
		Siblings []sibling `json:"siblings"`
	}
	if err := json.Unmarshal(body, &rev); err != nil || rev.SHA != testCommit || len(rev.Siblings) != 3 {
		t.Fatalf("revision: %v %s", err, body)
	}
	_, body = do(t, http.DefaultClient, "GET", ts.URL+"/api/models/org/model/refs")
	if !strings.Contains(string(body), `"targetCommit":"`+testCommit+`"`) {
		t.Errorf("refs: %s", body)
	}
}

func TestAuth(t *testing.T) {
	s, ts, _ := newRepo(t)
	s.Token = "secret"
	u := ts.URL + "/org/model/resolve/main/config.json"
	if r, _ := do(t, http.DefaultClient, "HEAD", u); r.StatusCode != 401 {
		t.Errorf("no token: want 401, got %d", r.StatusCode)
	}
	if r, _ := do(t, http.DefaultClient, "HEAD", u, "Authorization", "Bearer secret"); r.StatusCode != 200 {
		t.Errorf("token: want 200, got %d", r.StatusCode)
	}
	s.Gated = true
	if r, _ := do(t, http.DefaultClient, "HEAD", u); r.StatusCode != 403 || r.Header.Get("X-Error-Code") != "GatedRepo" {
		t.Errorf("gated: want 403 GatedRepo, got %d %q", r.StatusCode, r.Header.Get("X-Error-Code"))
	}
}

func TestExpiredURL(t *testing.T) {
	s, ts, _ := newRepo(t)
	s.URLTTL = time.Nanosecond
	resp, _ := do(t, noRedirect(), "HEAD", ts.URL+"/org/model/resolve/main/model.safetensors")
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := strconv.ParseInt(loc.Query().Get("exp"), 10, 64)
	if err != nil {
		t.Fatalf("Location %s: exp: %v", loc, err)
	}
	for time.Now().UnixNano() <= exp { // the URL's expiry, a nanosecond after it was signed, passes
		runtime.Gosched()
	}
	if r, _ := do(t, http.DefaultClient, "GET", loc.String()); r.StatusCode != 403 {
		t.Errorf("expired: want 403, got %d", r.StatusCode)
	}
}

func TestFaults(t *testing.T) {
	s, ts, files := newRepo(t)
	u := ts.URL + "/org/model/resolve/main/config.json"
	want := files["config.json"]
	cases := []struct {
		kind   FaultKind
		status int
		check  func(*http.Response, []byte) error
	}{
		{FaultFull200, 200, nil},
		{FaultBadRange, 206, func(r *http.Response, _ []byte) error {
			if r.Header.Get("Content-Range") == "bytes 1-3/7" {
				return fmt.Errorf("Content-Range not shifted")
			}
			return nil
		}},
		{FaultRange416, 416, nil},
		{FaultRateLimit, 429, func(r *http.Response, _ []byte) error {
			if !strings.Contains(r.Header.Get("RateLimit"), "t=") {
				return fmt.Errorf("no RateLimit header")
			}
			return nil
		}},
		{Fault5xx, 503, nil},
		{FaultExpire, 403, nil},
		{FaultFlip, 206, func(_ *http.Response, b []byte) error {
			if bytes.Equal(b, want[1:4]) {
				return fmt.Errorf("byte not flipped")
			}
			return nil
		}},
	}
	for _, c := range cases {
		s.SetFaults([]Fault{{Kind: c.kind, Times: 1}})
		resp, body := do(t, http.DefaultClient, "GET", u, "Range", "bytes=1-3")
		if resp.StatusCode != c.status {
			t.Errorf("%s: status: want %d, got %d", c.kind, c.status, resp.StatusCode)
		}
		if c.check != nil {
			if err := c.check(resp, body); err != nil {
				t.Errorf("%s: %v", c.kind, err)
			}
		}
		if resp, body := do(t, http.DefaultClient, "GET", u, "Range", "bytes=1-3"); resp.StatusCode != 206 || !bytes.Equal(body, want[1:4]) {
			t.Errorf("%s: second request should be clean: %d %q", c.kind, resp.StatusCode, body)
		}
	}
	for _, k := range []FaultKind{FaultDrop, FaultShort} {
		s.SetFaults([]Fault{{Kind: k, Times: 1}})
		resp, err := http.Get(ts.URL + "/org/model/resolve/main/model.safetensors")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err == nil {
			t.Errorf("%s: want a read error, got none", k)
		}
	}
	if st := s.Stats(); st.Faults[FaultShort] != 1 || st.DataRequests != 16 {
		t.Errorf("stats: %+v", st)
	}
}

func TestParseFault(t *testing.T) {
	for in, want := range map[string]Fault{
		"drop":       {FaultDrop, 0, 1},
		"503x3":      {Fault5xx, 0, 3},
		"flip@4":     {FaultFlip, 4, 1},
		"stall@2x2":  {FaultStall, 2, 2},
		"expire@0x1": {FaultExpire, 0, 1},
	} {
		got, err := ParseFault(in)
		if err != nil || got != want {
			t.Errorf("%q: want %+v, got %+v %v", in, want, got, err)
		}
	}
	for _, bad := range []string{"", "boom", "drop@x", "dropx0", "drop@-1", "503x"} {
		if _, err := ParseFault(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"drop", "503x3", "flip@4", "stall@2x2", "x", "@@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ft, err := ParseFault(s)
		if err != nil {
			return
		}
		if back, err := ParseFault(ft.String()); err != nil || back != ft {
			t.Fatalf("%q: round trip: %+v -> %+v %v", s, ft, back, err)
		}
	})
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=5-", "bytes=-3", "bytes=1-2,4-5", "items=1-2", "bytes=9-1"} {
		f.Add(s, int64(10))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size <= 0 {
			return
		}
		start, end, err := parseRange(h, size)
		if err == nil && (start < 0 || end >= size || start > end) {
			t.Fatalf("%q size %d: range %d-%d out of bounds", h, size, start, end)
		}
	})
}
