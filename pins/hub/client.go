package hub

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drama-tts/drama/internal/httpsafe"
	"github.com/drama-tts/drama/internal/wait"
)

// DefaultEndpoint is the Hub's address when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// Client speaks the Hub's HTTP protocol: HEADs of resolve URLs, the tree
// API, and ranged GETs of the data URLs the HEADs point to.
type Client struct {
	Endpoint    string // e.g. https://huggingface.co, no trailing slash
	Token       string // sent as a Bearer token, only to Endpoint's origin (scheme, host and port)
	TokenSource string // where Token came from, for messages
	UserAgent   string
	// API serves HEADs and API calls; it must not follow redirects (New
	// sets this up). Data serves ranged GETs. Both keep the token off
	// any redirect that leaves the endpoint's origin (httpsafe).
	API, Data *http.Client
	// Retries is how many times a HEAD or API call is retried after a
	// 408, 429, 5xx or network error; Backoff is the first delay, doubled
	// each time up to MaxBackoff.
	Retries             int
	Backoff, MaxBackoff time.Duration
	// HeadTimeout bounds one HEAD or API call.
	HeadTimeout time.Duration
	// OnRetry, if set, is told of each retry of a HEAD or API call before
	// its wait; it must be safe for concurrent use.
	OnRetry func(Retry)
}

// New returns a Client for endpoint with a transport fit for parallel
// ranged downloads: HTTP/1.1 only (one TCP connection per stream), enough
// idle connections for conns streams, no transparent compression.
func New(endpoint, token string, conns int) *Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     false,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConns:          2*conns + 4,
		MaxIdleConnsPerHost:   2*conns + 4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		DisableCompression:    true,
		ReadBufferSize:        256 << 10,
	}
	c := &Client{
		Endpoint:    strings.TrimRight(endpoint, "/"),
		Token:       token,
		UserAgent:   "drama-fetch",
		Retries:     5,
		Backoff:     time.Second,
		MaxBackoff:  16 * time.Second,
		HeadTimeout: 30 * time.Second,
		Data:        &http.Client{Transport: tr, CheckRedirect: httpsafe.CheckRedirect},
	}
	c.API = &http.Client{Transport: tr, CheckRedirect: sameHostRedirects}
	return c
}

// sameHostRedirects follows relative redirects (a renamed repository) and
// stops at an absolute one (the data URL), as huggingface_hub does. What
// it follows keeps the token only on the endpoint's origin
// (httpsafe.CheckRedirect).
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if err := httpsafe.CheckRedirect(req, via); err != nil {
		return err
	}
	loc := ""
	if req.Response != nil {
		loc = req.Response.Header.Get("Location")
	}
	if len(via) >= 5 || strings.Contains(loc, "://") || strings.HasPrefix(loc, "//") || req.URL.Host != via[0].URL.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// TokenFromEnv finds a token the way huggingface_hub does: HF_TOKEN (or
// the legacy HUGGING_FACE_HUB_TOKEN), else the file HF_TOKEN_PATH or
// $HF_HOME/token, unless HF_HUB_DISABLE_IMPLICIT_TOKEN is set. source
// names where it came from; the token itself is never printed.
func TokenFromEnv(getenv func(string) string) (token, source string) {
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v, k
		}
	}
	if truthy(getenv("HF_HUB_DISABLE_IMPLICIT_TOKEN")) {
		return "", ""
	}
	p := getenv("HF_TOKEN_PATH")
	if p == "" {
		p = filepath.Join(HFHome(getenv), "token")
	}
	data, err := os.ReadFile(p)
	if v := strings.TrimSpace(string(data)); err == nil && v != "" {
		return v, p
	}
	return "", ""
}

// Endpoint returns HF_ENDPOINT without a trailing slash, else
// DefaultEndpoint.
func Endpoint(getenv func(string) string) string {
	if v := strings.TrimRight(getenv("HF_ENDPOINT"), "/"); v != "" {
		return v
	}
	return DefaultEndpoint
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// Offline reports whether HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set.
func Offline(getenv func(string) string) bool {
	return truthy(getenv("HF_HUB_OFFLINE")) || truthy(getenv("TRANSFORMERS_OFFLINE"))
}

// resolveURL is the resolve URL of a file at a commit.
func (c *Client) resolveURL(repo, commit, path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.Endpoint + "/" + repo + "/resolve/" + url.PathEscape(commit) + "/" + strings.Join(segs, "/")
}

// sameHost reports whether u is on the endpoint's host (so the token may
// go there).
func (c *Client) sameHost(u string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(c.Endpoint)
	return err1 == nil && err2 == nil && a.Scheme == b.Scheme && a.Host == b.Host
}

// newRequest builds a request with drama's headers; the token only goes
// to the endpoint's host.
func (c *Client) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", c.UserAgent)
	if c.Token != "" && c.sameHost(u) {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

// statusError describes resp as an error.
func (c *Client) statusError(resp *http.Response, repo string, data bool) *StatusError {
	e := &StatusError{
		Method: resp.Request.Method, URL: redact(resp.Request.URL.String()), Status: resp.StatusCode,
		Code: clip(resp.Header.Get("X-Error-Code"), 64), Message: clip(resp.Header.Get("X-Error-Message"), maxErrorMessage),
		Repo: repo, Data: data,
	}
	if resp.Request.Header.Get("Authorization") != "" {
		e.TokenSource = c.TokenSource
		if e.TokenSource == "" {
			e.TokenSource = "the configured token"
		}
	}
	e.RetryAfter, _ = RetryDelay(resp.Header.Get("RateLimit"), resp.Header.Get("Retry-After"))
	return e
}

// delay is the wait before retry number attempt (0-based): the server's
// own figure when it gave one, else doubling backoff with jitter.
func (c *Client) delay(attempt int, err error) time.Duration {
	var se *StatusError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		return se.RetryAfter
	}
	d := c.Backoff << min(attempt, 16)
	if c.MaxBackoff > 0 && d > c.MaxBackoff {
		d = c.MaxBackoff
	}
	// A server that takes no connection is either starting up or not
	// there: retry it soon, and give up within seconds, not minutes.
	if isDial(err) {
		d = min(d, max(c.Backoff, c.MaxBackoff/4))
	}
	return d/2 + rand.N(d/2+1)
}

// shortCommit is the first 7 hex digits of a commit, as git shows it.
func shortCommit(c string) string { return c[:min(7, len(c))] }

func httpStatusText(code int) string { return http.StatusText(code) }

// isTransient reports whether err (a network error or a retryable
// status) is worth retrying.
func isTransient(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return retryable(se.Status)
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrNotHub) &&
		!errors.Is(err, errBudget) && !errors.Is(err, errTooManyEntries) // a cap reached: asking again reads more
}

// withRetry runs call until it succeeds, fails for good, or runs out of
// retries, telling OnRetry before each retry. what names the request for
// messages, u is where it goes. A request that never got an HTTP answer
// ends as a *NetError saying how long it was tried.
func (c *Client) withRetry(ctx context.Context, what, u string, call func(context.Context) error) error {
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, c.headTimeout())
		err := call(cctx)
		cancel()
		if err == nil || ctx.Err() != nil || !isTransient(err) || attempt >= c.Retries {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if isNetwork(err) {
				return &NetError{Host: origin(u), What: what, Attempts: attempt + 1, Waited: waited, Err: err}
			}
			return err
		}
		d := c.delay(attempt, err)
		if c.OnRetry != nil {
			c.OnRetry(Retry{What: what, N: attempt + 1, Of: c.Retries, Delay: d, Err: err, Network: isNetwork(err)})
		}
		if err := wait.Sleep(ctx, d); err != nil {
			return err
		}
		waited += d
	}
}

func (c *Client) headTimeout() time.Duration {
	if c.HeadTimeout > 0 {
		return c.HeadTimeout
	}
	return 30 * time.Second
}

// FileMeta is what a HEAD of a resolve URL says about a file.
type FileMeta struct {
	Commit string // X-Repo-Commit
	ETag   string // X-Linked-Etag (sha256 of an LFS file) else ETag (git blob sha1)
	Size   int64  // X-Linked-Size, else Content-Length of a non-redirect
	URL    string // where the bytes are: the redirect's Location, else the resolve URL
	LFS    bool   // X-Linked-Etag was present
}

// Head asks the Hub where a file's bytes are and what they are.
func (c *Client) Head(ctx context.Context, repo, commit, path string) (FileMeta, error) {
	var m FileMeta
	u := c.resolveURL(repo, commit, path)
	err := c.withRetry(ctx, "HEAD "+path, u, func(ctx context.Context) error {
		var err error
		m, err = c.head(ctx, repo, u)
		return err
	})
	if err != nil {
		return m, wrap(err, "hub: HEAD %s", path)
	}
	return m, nil
}

func (c *Client) head(ctx context.Context, repo, u string) (FileMeta, error) {
	req, err := c.newRequest(ctx, http.MethodHead, u)
	if err != nil {
		return FileMeta{}, err
	}
	resp, err := c.API.Do(req)
	if err != nil {
		return FileMeta{}, err
	}
	resp.Body.Close()
	redirect := resp.StatusCode >= 300 && resp.StatusCode < 400
	if resp.StatusCode != http.StatusOK && !redirect {
		return FileMeta{}, c.statusError(resp, repo, false)
	}
	h := resp.Header
	m := FileMeta{Commit: h.Get("X-Repo-Commit"), URL: resp.Request.URL.String(), Size: -1}
	if m.Commit == "" {
		return m, fmt.Errorf("%w: %s answered without X-Repo-Commit (a proxy or firewall in the way?)", ErrNotHub, redact(u))
	}
	m.ETag, m.LFS = NormalizeETag(h.Get("X-Linked-Etag")), h.Get("X-Linked-Etag") != ""
	if m.ETag == "" {
		m.ETag = NormalizeETag(h.Get("ETag"))
	}
	if v := h.Get("X-Linked-Size"); v != "" {
		m.Size, _ = strconv.ParseInt(v, 10, 64)
	} else if !redirect {
		m.Size = resp.ContentLength
	}
	if loc := h.Get("Location"); redirect && loc != "" {
		ref, err := resp.Request.URL.Parse(loc)
		if err != nil {
			return m, fmt.Errorf("%w: bad Location %q", ErrBadResponse, loc)
		}
		m.URL = ref.String()
	}
	return m, nil
}

// TreeFile is one file of a tree listing.
type TreeFile struct {
	Path    string
	Size    int64
	GitOID  string // git blob sha1 (of the pointer file, for LFS files)
	SHA256  string // LFS oid: sha256 of the content; "" for git files
	LFS     bool
	XetHash string
}

type treeEntry struct {
	Type    string `json:"type"`
	OID     string `json:"oid"`
	Size    int64  `json:"size"`
	Path    string `json:"path"`
	XetHash string `json:"xetHash"`
	LFS     *struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// Tree lists every file of a repository at a commit, following the Link
// pagination. The pages together may hold at most MaxTreeEntries entries
// and MaxTreeBytes bytes: a listing that reaches either is a *CapError,
// and no more of it is read.
func (c *Client) Tree(ctx context.Context, repo, commit string) ([]TreeFile, error) {
	next := c.Endpoint + "/api/models/" + repo + "/tree/" + url.PathEscape(commit) + "?recursive=true&expand=false"
	var out []TreeFile
	// Every byte read counts, a failed attempt's too; one more than the cap
	// lets a listing of exactly MaxTreeBytes through.
	budget, entries := int64(MaxTreeBytes+1), 0
	for next != "" {
		if !c.sameHost(next) {
			return nil, fmt.Errorf("hub: tree of %s@%s: %w: bad next page %s", repo, commit, ErrBadResponse, redact(next))
		}
		var files []TreeFile
		var n int
		var link string
		err := c.withRetry(ctx, "listing of "+repo+"@"+shortCommit(commit), next, func(ctx context.Context) error {
			var err error
			files, n, link, err = c.treePage(ctx, repo, next, &budget, MaxTreeEntries-entries)
			return err
		})
		switch {
		case errors.Is(err, errBudget):
			return nil, &CapError{What: "listing", Repo: repo, Revision: commit, Cap: "bytes", Limit: MaxTreeBytes, Endpoint: c.Endpoint}
		case errors.Is(err, errTooManyEntries):
			return nil, &CapError{What: "listing", Repo: repo, Revision: commit, Cap: "entries", Limit: MaxTreeEntries, Endpoint: c.Endpoint}
		case err != nil:
			return nil, wrap(err, "hub: tree of %s@%s", repo, commit)
		case n == 0 && link != "":
			// Each page before the last holds an entry, so the entry cap
			// bounds the pages too.
			return nil, fmt.Errorf("hub: tree of %s@%s: %w: an empty page links to another, %s", repo, commit, ErrBadResponse, redact(link))
		}
		entries += n
		out = append(out, files...)
		next = link
	}
	return out, nil
}

// errTooManyEntries is what treePage returns for a page holding more
// entries than it may.
var errTooManyEntries = errors.New("too many entries")

// treePage reads one page of a listing: a JSON array of entries, decoded
// one at a time, at most room of them, its bytes taken from *budget. It
// returns the page's files, its number of entries and its next link.
func (c *Client) treePage(ctx context.Context, repo, u string, budget *int64, room int) (files []TreeFile, n int, next string, err error) {
	resp, err := c.get(ctx, repo, u)
	if err != nil {
		return nil, 0, "", err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(budgetReader{r: resp.Body, left: budget})
	bad := func(err error) error {
		if errors.Is(err, errBudget) {
			return err
		}
		return fmt.Errorf("%w: %s: %v", ErrBadResponse, redact(u), err)
	}
	if tok, err := dec.Token(); err != nil {
		return nil, 0, "", bad(err)
	} else if tok != json.Delim('[') {
		return nil, 0, "", bad(fmt.Errorf("want a JSON array of entries, got %v", tok))
	}
	for dec.More() {
		if n >= room {
			return nil, 0, "", errTooManyEntries
		}
		var e treeEntry
		if err := dec.Decode(&e); err != nil {
			return nil, 0, "", bad(err)
		}
		n++
		if f, ok := e.file(); ok {
			files = append(files, f)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, "", bad(err)
	}
	next, err = c.nextLink(resp)
	return files, n, next, err
}

// file is the entry as a TreeFile, and false for a directory.
func (e treeEntry) file() (TreeFile, bool) {
	if e.Type != "file" {
		return TreeFile{}, false
	}
	f := TreeFile{Path: e.Path, Size: e.Size, GitOID: e.OID, XetHash: e.XetHash}
	if e.LFS != nil {
		f.SHA256, f.LFS, f.Size = e.LFS.OID, true, e.LFS.Size
	}
	return f, true
}

// get GETs u through the API client; any answer but 200 is an error of
// statusError's. The caller closes the body.
func (c *Client) get(ctx context.Context, repo, u string) (*http.Response, error) {
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, err
	}
	resp, err := c.API.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, c.statusError(resp, repo, false)
	}
	return resp, nil
}

// getJSON GETs an API URL of the endpoint, decodes its body into v, and
// returns the absolute URL of its Link rel="next" ("" when there is none).
// A body of more than limit bytes ends the read with errBudget.
func (c *Client) getJSON(ctx context.Context, repo, u string, limit int64, v any) (next string, err error) {
	resp, err := c.get(ctx, repo, u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	left := limit + 1
	if err := json.NewDecoder(budgetReader{r: resp.Body, left: &left}).Decode(v); err != nil {
		if errors.Is(err, errBudget) {
			return "", err
		}
		return "", fmt.Errorf("%w: %s: %v", ErrBadResponse, redact(u), err)
	}
	return c.nextLink(resp)
}

// nextLink is the absolute URL of resp's Link rel="next", "" when there
// is none.
func (c *Client) nextLink(resp *http.Response) (string, error) {
	next := NextLink(resp.Header.Get("Link"))
	if next == "" {
		return "", nil
	}
	ref, err := resp.Request.URL.Parse(next)
	if err != nil {
		return "", fmt.Errorf("%w: Link %q", ErrBadResponse, next)
	}
	return ref.String(), nil
}

// Refs returns the repository's branches and their commits.
func (c *Client) Refs(ctx context.Context, repo string) (map[string]string, error) {
	var out struct {
		Branches []struct {
			Name         string `json:"name"`
			TargetCommit string `json:"targetCommit"`
		} `json:"branches"`
	}
	u := c.Endpoint + "/api/models/" + repo + "/refs"
	err := c.withRetry(ctx, "refs of "+repo, u, func(ctx context.Context) error {
		_, err := c.getJSON(ctx, repo, u, maxRefsBytes, &out)
		return err
	})
	if errors.Is(err, errBudget) {
		return nil, &CapError{What: "refs", Repo: repo, Cap: "bytes", Limit: maxRefsBytes, Endpoint: c.Endpoint}
	}
	if err != nil {
		return nil, wrap(err, "hub: refs of %s", repo)
	}
	m := map[string]string{}
	for _, b := range out.Branches {
		m[b.Name] = b.TargetCommit
	}
	return m, nil
}

// RangeBody is the answer to a ranged GET: a body and the bytes of the
// file it carries.
type RangeBody struct {
	io.ReadCloser
	First, Last int64 // the body holds bytes First to Last of the file
	// Whole marks a 200: the whole file from byte 0, from a server that
	// ignores Range.
	Whole bool
}

// GetRange asks for bytes [first, last] of a file of size bytes at u. It
// takes any answer HTTP allows that holds byte first: a 206 whose
// Content-Range is the range asked for, or one that starts earlier or ends
// sooner (a server may cap a range), or a 200 with the whole file. The
// caller skips to first and asks again for what a shorter answer lacks.
// Anything else is an error and its body is discarded.
func (c *Client) GetRange(ctx context.Context, repo, u string, first, last, size int64) (*RangeBody, error) {
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(u, c.Endpoint+"/"+repo+"/resolve/") {
		req.Header.Del("Authorization") // a redirect target is signed: never send the token there
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", first, last))
	resp, err := c.Data.Do(req)
	if err != nil {
		return nil, err
	}
	rb, err := checkRange(resp, first, last, size)
	if err != nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
			return nil, c.statusError(resp, repo, true)
		}
		return nil, err
	}
	rb.ReadCloser = resp.Body
	return rb, nil
}

func checkRange(resp *http.Response, first, last, size int64) (*RangeBody, error) {
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, fmt.Errorf("%w: asked for bytes %d-%d unencoded, got Content-Encoding %q", ErrBadResponse, first, last, enc)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		// Range ignored: the whole file, from byte 0.
		if resp.ContentLength >= 0 && resp.ContentLength != size {
			return nil, fmt.Errorf("%w: asked for bytes %d-%d, got 200 with %d bytes of a %d-byte file", ErrBadResponse, first, last, resp.ContentLength, size)
		}
		return &RangeBody{First: 0, Last: size - 1, Whole: true}, nil
	case resp.StatusCode != http.StatusPartialContent:
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	cr, err := ParseContentRange(resp.Header.Get("Content-Range"))
	if err != nil {
		return nil, err
	}
	if cr.Size != size || cr.First > first || cr.Last < first || cr.Last >= size {
		return nil, fmt.Errorf("%w: want Content-Range bytes %d-%d/%d (or a part holding byte %d), got %q", ErrBadResponse, first, last, size, first, resp.Header.Get("Content-Range"))
	}
	if resp.ContentLength >= 0 && resp.ContentLength != cr.Last-cr.First+1 {
		return nil, fmt.Errorf("%w: Content-Range %q with Content-Length %d", ErrBadResponse, resp.Header.Get("Content-Range"), resp.ContentLength)
	}
	return &RangeBody{First: cr.First, Last: cr.Last}, nil
}
