package mirror

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a Server's knobs.
const (
	DefaultLFSMinSize = 10 << 20
	DefaultPageSize   = 1000
	DefaultURLTTL     = time.Hour
)

// Server answers the Hub's routes from a Source. Set the fields before the
// first request; SetFaults may be called at any time.
type Server struct {
	Source     Source
	LFSMinSize int64         // files this large or larger are LFS (default DefaultLFSMinSize)
	PageSize   int           // tree entries per page (default DefaultPageSize)
	URLTTL     time.Duration // lifetime of a signed /cdn URL (default DefaultURLTTL)
	// CDNURL, when set, is the base URL ("http://127.0.0.1:9001") of a
	// second listener serving CDN(), the way the Hub serves LFS content
	// from another host: a resolve of an LFS file then redirects there. A
	// CDNURL whose host is unspecified (0.0.0.0, [::]) takes the host name
	// of each request with CDNURL's port. Empty, the redirect stays on the
	// request's host, under /cdn/, which ServeHTTP serves too.
	CDNURL string
	// Token, when set, is required as "Authorization: Bearer <Token>" on
	// resolve and API routes; Gated then answers 403 GatedRepo instead of
	// 401 to a request without it.
	Token string
	Gated bool
	// BytesPerSec limits each data response's rate (0: unlimited).
	BytesPerSec int64
	// SlowBytesPerSec is the rate of a slow fault (default 64 KiB/s).
	SlowBytesPerSec int64
	// StallFor bounds how long a stall fault holds a response (default 1 min).
	StallFor time.Duration
	// RetryAfter is the t= of a 429 fault's RateLimit header in seconds.
	RetryAfter int
	// Log, if not nil, gets one line per request.
	Log func(format string, args ...any)

	initOnce sync.Once
	mux      *http.ServeMux // resolve and raw routes
	api      *http.ServeMux // /api/ routes
	cdn      *http.ServeMux // /cdn/ routes
	key      []byte
	digests  digestCache
	plan     faultPlan
	stats    struct{ bytes, data, heads, api, resolves, cdnAuth atomic.Int64 }
}

// SetFaults replaces the fault plan and restarts its count.
func (s *Server) SetFaults(faults []Fault) {
	s.plan.mu.Lock()
	defer s.plan.mu.Unlock()
	s.plan.faults, s.plan.n, s.plan.fired = append([]Fault(nil), faults...), 0, nil
}

// Stats are a Server's counters since it started.
type Stats struct {
	BytesServed  int64 // body bytes written by data responses
	DataRequests int64 // GETs of file bytes
	HeadRequests int64 // HEADs of resolve URLs
	Resolves     int64 // requests to resolve URLs (HEAD or GET)
	APIRequests  int64 // requests to /api/ routes
	// CDNAuthorized counts requests to the /cdn routes that carried an
	// Authorization header: a client leaking its token off the Hub.
	CDNAuthorized int64
	Faults        map[FaultKind]int
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.plan.mu.Lock()
	f := map[FaultKind]int{}
	for k, v := range s.plan.fired {
		f[k] = v
	}
	s.plan.mu.Unlock()
	return Stats{s.stats.bytes.Load(), s.stats.data.Load(), s.stats.heads.Load(), s.stats.resolves.Load(), s.stats.api.Load(), s.stats.cdnAuth.Load(), f}
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.key = make([]byte, 32)
		_, _ = rand.Read(s.key)
		m, a, c := http.NewServeMux(), http.NewServeMux(), http.NewServeMux()
		m.HandleFunc("GET /{owner}/{name}/resolve/{rev}/{path...}", s.handleResolve)
		m.HandleFunc("GET /{owner}/{name}/raw/{rev}/{path...}", s.handleRaw)
		m.HandleFunc("/", notFound)
		a.HandleFunc("GET /api/models/{owner}/{name}", s.handleRevision)
		a.HandleFunc("GET /api/models/{owner}/{name}/tree/{rev}", s.handleTree)
		a.HandleFunc("GET /api/models/{owner}/{name}/tree/{rev}/{path...}", s.handleTree)
		a.HandleFunc("GET /api/models/{owner}/{name}/revision/{rev}", s.handleRevision)
		a.HandleFunc("GET /api/models/{owner}/{name}/refs", s.handleRefs)
		a.HandleFunc("GET /api/models/{owner}/{name}/commits/{rev}", s.handleCommits)
		a.HandleFunc("POST /api/models/{owner}/{name}/paths-info/{rev}", s.handlePathsInfo)
		a.HandleFunc("/", notFound)
		c.HandleFunc("GET /cdn/{owner}/{name}/{commit}/{path...}", s.handleCDN)
		c.HandleFunc("/", notFound)
		s.mux, s.api, s.cdn = m, a, c
	})
}

// CDN returns the handler of the /cdn routes alone, for the listener that
// CDNURL names. It never asks for a token: its URLs are signed.
func (s *Server) CDN() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.init()
		s.logRequest(r)
		s.cdn.ServeHTTP(w, r)
	})
}

func (s *Server) logRequest(r *http.Request) {
	if s.Log != nil {
		s.Log("%s %s%s range=%q", r.Method, r.Host, r.URL.RequestURI(), r.Header.Get("Range"))
	}
}

// notFound answers a route the mirror does not have, in the Hub's form.
func notFound(w http.ResponseWriter, r *http.Request) {
	hubError(w, http.StatusNotFound, "", "Sorry, we can't find the page you are looking for: "+r.Method+" "+r.URL.Path)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.init()
	s.logRequest(r)
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/"):
		s.stats.api.Add(1)
		s.api.ServeHTTP(w, r)
	case strings.HasPrefix(r.URL.Path, "/cdn/"):
		s.cdn.ServeHTTP(w, r)
	default:
		s.mux.ServeHTTP(w, r)
	}
}

func (s *Server) lfsMin() int64 {
	if s.LFSMinSize > 0 {
		return s.LFSMinSize
	}
	return DefaultLFSMinSize
}

func (s *Server) isLFS(e Entry) bool { return e.Size >= s.lfsMin() || isLFSName(e.Path) }

// hubError writes an error the way the Hub does: X-Error-Code,
// X-Error-Message and a JSON body.
func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"error\":%q}\n", msg)
}

// authorized checks the token on Hub routes and answers the refusal.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, repo string) bool {
	if s.Token == "" || r.Header.Get("Authorization") == "Bearer "+s.Token {
		return true
	}
	switch {
	case s.Gated:
		hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+repo+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
	case r.Header.Get("Authorization") != "":
		hubError(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
	default:
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url: "+r.URL.String()+".")
	}
	return false
}

// DefaultBranch is the branch a request without a revision (or with the
// revision HEAD) reads.
const DefaultBranch = "main"

// resolveRev maps rev to a commit; "" and "HEAD" name the default branch:
// main, else the repository's only branch.
func (s *Server) resolveRev(repo, rev string) (string, error) {
	if rev != "" && rev != "HEAD" {
		return s.Source.Resolve(repo, rev)
	}
	c, err := s.Source.Resolve(repo, DefaultBranch)
	if err == nil || errors.Is(err, errNoRepo) {
		return c, err
	}
	if refs, rerr := s.Source.Refs(repo); rerr == nil && len(refs) == 1 {
		for _, only := range refs {
			return only, nil
		}
	}
	return "", fmt.Errorf("no branch %q to take as the default: %w", DefaultBranch, err)
}

// commitOf resolves the request's repo and rev, answering 404 itself.
func (s *Server) commitOf(w http.ResponseWriter, r *http.Request) (repo, commit string, ok bool) {
	repo = r.PathValue("owner") + "/" + r.PathValue("name")
	if !s.authorized(w, r, repo) {
		return repo, "", false
	}
	commit, err := s.resolveRev(repo, r.PathValue("rev"))
	if err != nil {
		code := "RevisionNotFound"
		if errors.Is(err, errNoRepo) {
			code = "RepoNotFound"
		}
		hubError(w, http.StatusNotFound, code, fmt.Sprintf("%s: %v", repo, err))
		return repo, "", false
	}
	return repo, commit, true
}

// filesOf resolves the request's repo and rev and lists the commit's
// files, answering errors itself.
func (s *Server) filesOf(w http.ResponseWriter, r *http.Request) (repo, commit string, files []Entry, ok bool) {
	if repo, commit, ok = s.commitOf(w, r); ok {
		files, ok = s.listFiles(w, repo, commit)
	}
	return repo, commit, files, ok
}

// listFiles lists the files of repo at commit, answering 404 itself.
func (s *Server) listFiles(w http.ResponseWriter, repo, commit string) ([]Entry, bool) {
	files, err := s.Source.Files(repo, commit)
	if err != nil {
		hubError(w, http.StatusNotFound, "RevisionNotFound", err.Error())
		return nil, false
	}
	return files, true
}

func (s *Server) lookup(repo, commit, p string) (Entry, error) {
	files, err := s.Source.Files(repo, commit)
	if err != nil {
		return Entry{}, err
	}
	for _, e := range files {
		if e.Path == p {
			return e, nil
		}
	}
	if rf, ok := s.Source.(refuser); ok {
		if err := rf.refused(repo, commit, p); err != nil {
			return Entry{}, err
		}
	}
	return Entry{}, fmt.Errorf("%s@%s: entry %q: %w", repo, commit, p, ErrNotFound)
}

// fileOf resolves the request's repo, rev and path to a file and its tree
// entry, answering errors itself. X-Repo-Commit is set once the commit is
// known, on errors too, as the Hub does.
func (s *Server) fileOf(w http.ResponseWriter, r *http.Request) (repo, commit string, e Entry, te TreeEntry, ok bool) {
	repo, commit, ok = s.commitOf(w, r)
	if !ok {
		return repo, commit, e, te, false
	}
	w.Header().Set("X-Repo-Commit", commit)
	e, err := s.lookup(repo, commit, r.PathValue("path"))
	if err != nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", err.Error())
		return repo, commit, e, te, false
	}
	if te, err = s.entry(e); err != nil {
		hubError(w, http.StatusInternalServerError, "", err.Error())
		return repo, commit, e, te, false
	}
	return repo, commit, e, te, true
}

func (s *Server) handleResolve(w http.ResponseWriter, r *http.Request) {
	s.stats.resolves.Add(1)
	if r.Method == http.MethodHead {
		s.stats.heads.Add(1)
	}
	repo, commit, e, te, ok := s.fileOf(w, r)
	if !ok {
		return
	}
	h := w.Header()
	h.Set("ETag", `"`+te.OID+`"`) // the git blob sha1 (of the pointer file, for LFS)
	if te.LFS == nil {
		if notModified(w, r, te.OID) {
			return
		}
		s.serveData(w, r, e)
		return
	}
	h.Set("X-Linked-Etag", `"`+te.LFS.OID+`"`)
	h.Set("X-Linked-Size", strconv.FormatInt(e.Size, 10))
	if notModified(w, r, te.OID, te.LFS.OID) {
		return
	}
	s.redirect(w, r, repo, commit, e)
}

// handleRaw answers /raw/: the git blob, so for an LFS file its pointer
// file, never a redirect.
func (s *Server) handleRaw(w http.ResponseWriter, r *http.Request) {
	_, _, e, te, ok := s.fileOf(w, r)
	if !ok {
		return
	}
	w.Header().Set("ETag", `"`+te.OID+`"`)
	if notModified(w, r, te.OID) {
		return
	}
	if te.LFS == nil {
		s.serveData(w, r, e)
		return
	}
	serveBytes(w, r, []byte(LFSPointer(te.LFS.OID, te.LFS.Size)), "text/plain; charset=utf-8")
}

// notModified answers 304 when If-None-Match names one of etags (or "*").
func notModified(w http.ResponseWriter, r *http.Request, etags ...string) bool {
	inm := r.Header.Get("If-None-Match")
	if inm == "" {
		return false
	}
	for _, t := range strings.Split(inm, ",") {
		t = strings.Trim(strings.TrimPrefix(strings.TrimSpace(t), "W/"), `"`)
		for _, e := range etags {
			if t == "*" || t == e {
				w.WriteHeader(http.StatusNotModified)
				return true
			}
		}
	}
	return false
}

// cdnBase returns scheme://host[:port] of the CDN for a request.
func (s *Server) cdnBase(r *http.Request) string {
	if s.CDNURL == "" {
		return "http://" + r.Host
	}
	u, err := url.Parse(s.CDNURL)
	if err != nil || u.Host == "" {
		return "http://" + r.Host
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() == "" || (ip != nil && ip.IsUnspecified()) {
		host := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		u.Host = net.JoinHostPort(host, u.Port())
	}
	return u.Scheme + "://" + u.Host
}

// redirect answers a resolve of an LFS file with a signed /cdn Location.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, repo, commit string, e Entry) {
	ttl := s.URLTTL
	if ttl <= 0 {
		ttl = DefaultURLTTL
	}
	exp := strconv.FormatInt(time.Now().Add(ttl).UnixNano(), 10)
	p := "/cdn/" + repo + "/" + commit + "/" + e.Path
	loc := s.cdnBase(r) + (&url.URL{Path: p}).EscapedPath() + "?exp=" + exp + "&sig=" + s.sign(p, exp)
	body := "Found. Redirecting to " + loc
	h := w.Header()
	h.Set("Location", loc)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusFound)
	if r.Method != http.MethodHead {
		io.WriteString(w, body)
	}
}

func (s *Server) sign(p, exp string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(p + "\x00" + exp))
	return hex.EncodeToString(m.Sum(nil))
}

// handleCDN serves a signed URL. It ignores Authorization (a client
// following the redirect may keep it; Stats counts those that do) and
// answers with X-Repo-Commit and the sha256 as ETag, so that a client that
// reads the file's identity after following the redirect finds it.
func (s *Server) handleCDN(w http.ResponseWriter, r *http.Request) {
	repo := r.PathValue("owner") + "/" + r.PathValue("name")
	commit, p := r.PathValue("commit"), r.PathValue("path")
	if r.Header.Get("Authorization") != "" {
		s.stats.cdnAuth.Add(1)
	}
	q := r.URL.Query()
	exp := q.Get("exp")
	if !hmac.Equal([]byte(q.Get("sig")), []byte(s.sign("/cdn/"+repo+"/"+commit+"/"+p, exp))) {
		http.Error(w, "SignatureDoesNotMatch", http.StatusForbidden)
		return
	}
	if n, err := strconv.ParseInt(exp, 10, 64); err != nil || time.Now().UnixNano() > n {
		http.Error(w, "AccessDenied: Request has expired", http.StatusForbidden)
		return
	}
	e, err := s.lookup(repo, commit, p)
	if err != nil {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	d, err := s.digests.get(s.Source, e)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	w.Header().Set("ETag", `"`+d.SHA256+`"`)
	if notModified(w, r, d.SHA256) {
		return
	}
	s.serveData(w, r, e)
}

// serveBytes answers HEAD or GET of a small in-memory body, honouring one
// Range; no faults apply.
func serveBytes(w http.ResponseWriter, r *http.Request, b []byte, ctype string) {
	h := w.Header()
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", ctype)
	size := int64(len(b))
	start, end, status := int64(0), size-1, http.StatusOK
	if rng := r.Header.Get("Range"); rng != "" && r.Method != http.MethodHead {
		a, z, err := parseRange(rng, size)
		switch {
		case err == nil:
			start, end, status = a, z, http.StatusPartialContent
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a, z, size))
		case errors.Is(err, errUnsatisfiable):
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			http.Error(w, "Range Not Satisfiable", http.StatusRequestedRangeNotSatisfiable)
			return
		}
	}
	h.Set("Content-Length", strconv.FormatInt(end-start+1, 10))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(b[start : end+1])
	}
}

// serveData answers HEAD or GET of a file's bytes, honouring one Range and
// the fault plan.
func (s *Server) serveData(w http.ResponseWriter, r *http.Request, e Entry) {
	f, err := s.Source.Open(e)
	if err != nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", e.Path+": "+err.Error())
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", "application/octet-stream")
	if r.Method == http.MethodHead {
		h.Set("Content-Length", strconv.FormatInt(e.Size, 10))
		w.WriteHeader(http.StatusOK)
		return
	}
	s.stats.data.Add(1)
	resp := response{status: http.StatusOK, start: 0, end: e.Size - 1, size: e.Size}
	if rng := r.Header.Get("Range"); rng != "" {
		start, end, err := parseRange(rng, e.Size)
		switch {
		case err == nil:
			resp.status, resp.start, resp.end = http.StatusPartialContent, start, end
		case errors.Is(err, errUnsatisfiable):
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", e.Size))
			http.Error(w, "Range Not Satisfiable", http.StatusRequestedRangeNotSatisfiable)
			return
		}
	}
	if kind, ok := s.plan.next(); ok {
		if s.applyFault(w, r, kind, &resp) {
			return
		}
	}
	s.writeBody(w, r, f, resp)
}

// response is the plan of one data response.
type response struct {
	status     int
	start, end int64 // inclusive, of the file
	size       int64
	announce   string // Content-Range to announce instead of the true one
	cut        int64  // stop after this many body bytes (-1: none)
	stall      bool   // hang after cut instead of dropping
	flip       bool
	slow       bool // send at SlowBytesPerSec
}

// applyFault changes resp or answers the request itself (true).
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, kind FaultKind, resp *response) bool {
	h := w.Header()
	n := resp.end - resp.start + 1
	switch kind {
	case FaultFull200:
		resp.status, resp.start, resp.end = http.StatusOK, 0, resp.size-1
	case FaultBadRange:
		resp.status = http.StatusPartialContent
		resp.announce = fmt.Sprintf("bytes %d-%d/%d", resp.start+1, resp.end+1, resp.size)
	case FaultRange416:
		h.Set("Content-Range", fmt.Sprintf("bytes */%d", resp.size))
		http.Error(w, "Range Not Satisfiable", http.StatusRequestedRangeNotSatisfiable)
		return true
	case FaultRateLimit:
		t := strconv.Itoa(s.RetryAfter)
		h.Set("RateLimit", `"resolvers";r=0;t=`+t)
		h.Set("RateLimit-Policy", `"fixed window";"resolvers";q=3000;w=300`)
		h.Set("Retry-After", t)
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
		return true
	case Fault5xx:
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		return true
	case FaultExpire:
		http.Error(w, "AccessDenied: Request has expired", http.StatusForbidden)
		return true
	case FaultDrop, FaultStall:
		resp.cut, resp.stall = n/2, kind == FaultStall
	case FaultShort:
		resp.cut = n - 1
	case FaultFlip:
		resp.flip = true
	case FaultSlow:
		resp.slow = true
	}
	return false
}

// writeBody sends resp's headers and bytes, throttled and counted, and
// carries out a cut (drop or stall).
func (s *Server) writeBody(w http.ResponseWriter, r *http.Request, f *os.File, resp response) {
	n := resp.end - resp.start + 1
	h := w.Header()
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	if resp.status == http.StatusPartialContent {
		cr := fmt.Sprintf("bytes %d-%d/%d", resp.start, resp.end, resp.size)
		if resp.announce != "" {
			cr = resp.announce
		}
		h.Set("Content-Range", cr)
	}
	w.WriteHeader(resp.status)
	limit := n
	if resp.cut > 0 || resp.stall {
		limit = resp.cut
	}
	var src io.Reader = io.NewSectionReader(f, resp.start, limit)
	if resp.flip {
		src = &flipReader{r: src}
	}
	rate := s.BytesPerSec
	if resp.slow {
		rate = cmp.Or(s.SlowBytesPerSec, 64<<10)
	}
	s.copyThrottled(w, src, rate)
	if limit < n {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		if resp.stall {
			s.stall(r)
		}
		panic(http.ErrAbortHandler) // drop the connection mid-body
	}
}

func (s *Server) stall(r *http.Request) {
	d := s.StallFor
	if d <= 0 {
		d = time.Minute
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-t.C:
	}
}

// copyThrottled copies src to w in pieces at no more than rate bytes a
// second (0: unlimited), counting the bytes written.
func (s *Server) copyThrottled(w io.Writer, src io.Reader, rate int64) {
	buf := make([]byte, 64<<10)
	if rate > 0 && rate < 64<<10 {
		buf = buf[:max(rate/8, 1)]
	}
	start := time.Now()
	var sent int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			sent += int64(m)
			s.stats.bytes.Add(int64(m))
			if werr != nil {
				return
			}
			if rate > 0 {
				due := time.Duration(float64(sent) / float64(rate) * float64(time.Second))
				time.Sleep(due - time.Since(start))
			}
		}
		if err != nil {
			return
		}
	}
}

// flipReader flips the lowest bit of the first byte it returns.
type flipReader struct {
	r    io.Reader
	done bool
}

// Read reads from the underlying reader, flipping the first byte once.
func (f *flipReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 && !f.done {
		p[0] ^= 1
		f.done = true
	}
	return n, err
}
