package fetchcmd

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/realclient"
)

// standIn is a small stand-in of the Hub, written from the protocol the
// real clients speak and independent of drama's mirror: resolve URLs
// (HEAD and GET, small files answered directly with their git blob sha1 as
// ETag, LFS files redirected to a CDN on another host with X-Linked-Etag
// and X-Linked-Size), the CDN, and paths-info. Range is honoured by
// net/http's ServeContent.
type standIn struct {
	hub, cdn *httptest.Server
	repo     string
	commit   string
	files    map[string][]byte
	lfsMin   int
	// wholeSmall makes the small-file route ignore Range and answer 200
	// with the whole file, as HTTP allows.
	wholeSmall bool
	// rangeCap, when set, makes the CDN answer a range with at most that
	// many bytes, starting a little before the byte asked for, as a
	// server may.
	rangeCap int64
}

func newStandIn(t *testing.T, repo, commit string, files map[string][]byte, lfsMin int) *standIn {
	t.Helper()
	s := &standIn{repo: repo, commit: commit, files: files, lfsMin: lfsMin}
	// The CDN must be another host name, not only another port: the
	// clients follow a redirect to the same host name as part of the Hub.
	s.cdn = httptest.NewUnstartedServer(http.HandlerFunc(s.serveCDN))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		msg := fmt.Sprintf("no second loopback address (127.0.0.2) for the stand-in's CDN: %v", err)
		if os.Getenv(realclient.RequireEnv) == "require" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s.cdn.Listener.Close()
	s.cdn.Listener = l
	s.cdn.Start()
	s.hub = httptest.NewServer(http.HandlerFunc(s.serveHub))
	t.Cleanup(s.hub.Close)
	t.Cleanup(s.cdn.Close)
	return s
}

func gitSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (s *standIn) lfs(b []byte) bool { return len(b) >= s.lfsMin }

func (s *standIn) serveCDN(w http.ResponseWriter, r *http.Request) {
	oid := strings.TrimPrefix(r.URL.Path, "/")
	for _, b := range s.files {
		if s.lfs(b) && sha256Hex(b) == oid {
			w.Header().Set("ETag", `"`+oid+`"`)
			var first, last int64
			if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last); s.rangeCap > 0 && err == nil && last < int64(len(b)) {
				first = max(0, first-7)
				last = min(last, first+s.rangeCap-1)
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(b)))
				w.Header().Set("Content-Length", fmt.Sprint(last-first+1))
				w.WriteHeader(http.StatusPartialContent)
				w.Write(b[first : last+1])
				return
			}
			http.ServeContent(w, r, "", time.Unix(0, 0), bytes.NewReader(b))
			return
		}
	}
	http.NotFound(w, r)
}

func (s *standIn) notFound(w http.ResponseWriter, code string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, `{"error":%q}`, code)
}

func (s *standIn) serveHub(w http.ResponseWriter, r *http.Request) {
	resolve := "/" + s.repo + "/resolve/"
	info := "/api/models/" + s.repo + "/paths-info/"
	switch {
	case strings.HasPrefix(r.URL.Path, resolve):
		rev, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, resolve), "/")
		if rev != s.commit && rev != "main" {
			s.notFound(w, "RevisionNotFound")
			return
		}
		b, ok := s.files[path]
		if !ok {
			w.Header().Set("X-Repo-Commit", s.commit)
			s.notFound(w, "EntryNotFound")
			return
		}
		w.Header().Set("X-Repo-Commit", s.commit)
		if s.lfs(b) {
			oid := sha256Hex(b)
			w.Header().Set("X-Linked-Etag", `"`+oid+`"`)
			w.Header().Set("X-Linked-Size", fmt.Sprint(len(b)))
			w.Header().Set("ETag", `"`+gitSHA1([]byte("pointer "+oid))+`"`)
			http.Redirect(w, r, s.cdn.URL+"/"+oid, http.StatusFound)
			return
		}
		w.Header().Set("ETag", `"`+gitSHA1(b)+`"`)
		if s.wholeSmall {
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			if r.Method != http.MethodHead {
				w.Write(b)
			}
			return
		}
		http.ServeContent(w, r, "", time.Unix(0, 0), bytes.NewReader(b))
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, info):
		var req struct {
			Paths []string `json:"paths"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var out []map[string]any
		for _, p := range req.Paths {
			b, ok := s.files[p]
			if !ok {
				continue
			}
			e := map[string]any{"type": "file", "path": p, "size": len(b), "oid": gitSHA1(b),
				"lastCommit": map[string]any{"id": s.commit, "title": "add files", "date": "2026-01-01T00:00:00.000Z"}}
			if s.lfs(b) {
				e["oid"] = gitSHA1([]byte("pointer " + sha256Hex(b)))
				e["lfs"] = map[string]any{"oid": sha256Hex(b), "size": len(b), "pointerSize": 134}
			}
			out = append(out, e)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	default:
		s.notFound(w, "RepoNotFound")
	}
}
