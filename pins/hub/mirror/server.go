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
	mux      *http.ServeMux // resolve routes
	api      *http.ServeMux // /api/ and /cdn/ routes
	key      []byte
	digests  digestCache
	plan     faultPlan
	stats    struct{ bytes, data, heads, api, resolves atomic.Int64 }
}

// New returns a Server over src with the defaults.
func New(src Source) *Server { return &Server{Source: src} }

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
	APIRequests  int64 // tree, revision and refs requests
	Faults       map[FaultKind]int
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.plan.mu.Lock()
	f := map[FaultKind]int{}
	for k, v := range s.plan.fired {
		f[k] = v
	}
	s.plan.mu.Unlock()
	return Stats{s.stats.bytes.Load(), s.stats.data.Load(), s.stats.heads.Load(), s.stats.resolves.Load(), s.stats.api.Load(), f}
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.key = make([]byte, 32)
		_, _ = rand.Read(s.key)
		m, a := http.NewServeMux(), http.NewServeMux()
		m.HandleFunc("GET /{owner}/{name}/resolve/{rev}/{path...}", s.handleResolve)
		a.HandleFunc("GET /api/models/{owner}/{name}/tree/{rev}", s.handleTree)
		a.HandleFunc("GET /api/models/{owner}/{name}/tree/{rev}/{path...}", s.handleTree)
		a.HandleFunc("GET /api/models/{owner}/{name}/revision/{rev}", s.handleRevision)
		a.HandleFunc("GET /api/models/{owner}/{name}/refs", s.handleRefs)
		a.HandleFunc("GET /cdn/{owner}/{name}/{commit}/{path...}", s.handleCDN)
		s.mux, s.api = m, a
	})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.init()
	if s.Log != nil {
		s.Log("%s %s range=%q", r.Method, r.URL.RequestURI(), r.Header.Get("Range"))
	}
	if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/cdn/") {
		s.api.ServeHTTP(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
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

// commitOf resolves the request's repo and rev, answering 404 itself.
func (s *Server) commitOf(w http.ResponseWriter, r *http.Request) (repo, commit string, ok bool) {
	repo = r.PathValue("owner") + "/" + r.PathValue("name")
	if !s.authorized(w, r, repo) {
		return repo, "", false
	}
	rev := r.PathValue("rev")
	commit, err := s.Source.Resolve(repo, rev)
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
	return Entry{}, fmt.Errorf("%s@%s: entry %q: %w", repo, commit, p, ErrNotFound)
}

func (s *Server) handleResolve(w http.ResponseWriter, r *http.Request) {
	s.stats.resolves.Add(1)
	if r.Method == http.MethodHead {
		s.stats.heads.Add(1)
	}
	repo, commit, ok := s.commitOf(w, r)
	if !ok {
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	e, err := s.lookup(repo, commit, r.PathValue("path"))
	if err != nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", err.Error())
		return
	}
	te, err := s.entry(e)
	if err != nil {
		hubError(w, http.StatusInternalServerError, "", err.Error())
		return
	}
	w.Header().Set("ETag", `"`+te.OID+`"`) // the git blob sha1 (of the pointer file, for LFS)
	if te.LFS == nil {
		s.serveData(w, r, e)
		return
	}
	s.redirect(w, r, repo, commit, e, te.LFS.OID)
}

// redirect answers a resolve of an LFS file with a signed /cdn Location.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, repo, commit string, e Entry, sha256hex string) {
	ttl := s.URLTTL
	if ttl <= 0 {
		ttl = DefaultURLTTL
	}
	exp := strconv.FormatInt(time.Now().Add(ttl).UnixNano(), 10)
	p := "/cdn/" + repo + "/" + commit + "/" + e.Path
	loc := "http://" + r.Host + (&url.URL{Path: p}).EscapedPath() + "?exp=" + exp + "&sig=" + s.sign(p, exp)
	body := "Found. Redirecting to " + loc
	h := w.Header()
	h.Set("X-Linked-Etag", `"`+sha256hex+`"`)
	h.Set("X-Linked-Size", strconv.FormatInt(e.Size, 10))
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

func (s *Server) handleCDN(w http.ResponseWriter, r *http.Request) {
	repo := r.PathValue("owner") + "/" + r.PathValue("name")
	commit, p := r.PathValue("commit"), r.PathValue("path")
	q := r.URL.Query()
	exp := q.Get("exp")
	if !hmac.Equal([]byte(q.Get("sig")), []byte(s.sign("/cdn/"+repo+"/"+commit+"/"+p, exp))) {
		http.Error(w, "SignatureDoesNotMatch", http.StatusForbidden)
		return
	}
	if r.Header.Get("Authorization") != "" {
		http.Error(w, "InvalidArgument: Only one auth mechanism allowed", http.StatusBadRequest)
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
	s.serveData(w, r, e)
}

// serveData answers HEAD or GET of a file's bytes, honouring one Range and
// the fault plan.
func (s *Server) serveData(w http.ResponseWriter, r *http.Request, e Entry) {
	f, err := os.Open(e.Abs)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
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
