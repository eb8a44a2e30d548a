package httpsafe

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// seen records the credential headers each request to a server carried.
type seen struct {
	mu   sync.Mutex
	hdrs []http.Header
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := http.Header{}
	for _, k := range credentialHeaders {
		if v := r.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	s.hdrs = append(s.hdrs, h)
}

func (s *seen) credentials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, h := range s.hdrs {
		for k := range h {
			out = append(out, k)
		}
	}
	return out
}

// target is a server that answers 200 and records what it got.
func target(t *testing.T, tlsOn bool) (*httptest.Server, *seen) {
	s := &seen{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.add(r); w.Write([]byte("ok")) })
	var ts *httptest.Server
	if tlsOn {
		ts = httptest.NewTLSServer(h)
	} else {
		ts = httptest.NewServer(h)
	}
	t.Cleanup(ts.Close)
	return ts, s
}

// redirector answers every request with a 302 to loc.
func redirector(t *testing.T, tlsOn bool, loc func() string) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, loc(), http.StatusFound) })
	var ts *httptest.Server
	if tlsOn {
		ts = httptest.NewTLSServer(h)
	} else {
		ts = httptest.NewServer(h)
	}
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, c *http.Client, u string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("X-Api-Key", "secret")
	req.Header.Set("Cookie", "session=secret")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d", u, resp.StatusCode)
	}
}

func client() *http.Client {
	return &http.Client{CheckRedirect: CheckRedirect,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// An attacker's hub on 127.0.0.1:A redirects to its own listener on
// 127.0.0.1:B: the same host name, so Go's own policy keeps the token.
func TestOtherPortGetsNoCredentials(t *testing.T) {
	b, got := target(t, false)
	a := redirector(t, false, func() string { return b.URL + "/cdn/file" })
	get(t, client(), a.URL+"/org/model/resolve/main/file")
	if c := got.credentials(); len(c) != 0 {
		t.Errorf("127.0.0.1:B got %v from a redirect off 127.0.0.1:A", c)
	}
}

// https to http: the token would cross the network in the clear.
func TestDowngradeGetsNoCredentials(t *testing.T) {
	b, got := target(t, false)
	a := redirector(t, true, func() string { return b.URL + "/plain" })
	get(t, client(), a.URL+"/x")
	if c := got.credentials(); len(c) != 0 {
		t.Errorf("an https to http redirect carried %v", c)
	}
}

// A chain that leaves the origin and comes back stays without the token:
// the host in the middle chose where it went.
func TestChainBackToOriginGetsNoCredentials(t *testing.T) {
	var originSeen seen
	var bURL string
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, bURL, http.StatusFound) })
	mux.HandleFunc("/back", func(w http.ResponseWriter, r *http.Request) { originSeen.add(r); w.Write([]byte("ok")) })
	a := httptest.NewServer(mux)
	t.Cleanup(a.Close)
	bURL = redirector(t, false, func() string { return a.URL + "/back" }).URL
	get(t, client(), a.URL+"/start")
	if c := originSeen.credentials(); len(c) != 0 {
		t.Errorf("back at the origin through another port: got %v", c)
	}
}

// A same-origin redirect, relative or absolute, keeps the token: the Hub
// redirects a renamed repository's URLs on its own host.
func TestSameOriginKeepsCredentials(t *testing.T) {
	var got seen
	mux := http.NewServeMux()
	var self string
	mux.HandleFunc("/old/model/resolve/main/f", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new/model/resolve/main/f", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/abs", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, self+"/new/model/resolve/main/f", http.StatusFound)
	})
	mux.HandleFunc("/new/model/resolve/main/f", func(w http.ResponseWriter, r *http.Request) { got.add(r); w.Write([]byte("ok")) })
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	self = ts.URL
	get(t, client(), ts.URL+"/old/model/resolve/main/f")
	get(t, client(), ts.URL+"/abs")
	c := got.credentials()
	if len(c) != 6 {
		t.Errorf("same-origin redirects: want Authorization, X-Api-Key and Cookie kept on both, got %v", c)
	}
}

func TestTooManyRedirects(t *testing.T) {
	var ts *httptest.Server
	ts = redirector(t, false, func() string { return ts.URL + "/again" })
	_, err := client().Get(ts.URL)
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Errorf("want the loop stopped after 10 redirects, got %v", err)
	}
}

func TestOrigin(t *testing.T) {
	same := [][2]string{
		{"https://hub.example/a", "https://HUB.example:443/b"},
		{"http://127.0.0.1/x", "http://127.0.0.1:80/y"},
		{"http://[::1]:8080/", "http://[::1]:8080/z"},
	}
	for _, p := range same {
		if o1, o2 := origin(t, p[0]), origin(t, p[1]); o1 != o2 {
			t.Errorf("%s and %s: want one origin, got %s and %s", p[0], p[1], o1, o2)
		}
	}
	differ := [][2]string{
		{"https://hub.example/", "http://hub.example/"},
		{"https://hub.example:8443/", "http://hub.example:8443/"},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8001/"},
		{"https://hub.example/", "https://cdn.hub.example/"},
		{"https://hub.example/", "https://hub.example.evil/"},
	}
	for _, p := range differ {
		if o1, o2 := origin(t, p[0]), origin(t, p[1]); o1 == o2 {
			t.Errorf("%s and %s: want two origins, got %s for both", p[0], p[1], o1)
		}
	}
}

func origin(t *testing.T, s string) string {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return Origin(u)
}

// CheckRedirect alone, on a scheme change with the port kept.
func TestCheckRedirectSchemeOnly(t *testing.T) {
	first, _ := http.NewRequest("GET", "https://hub.example:8443/a", nil)
	next, _ := http.NewRequest("GET", "http://hub.example:8443/b", nil)
	next.Header.Set("Authorization", "Bearer secret")
	next.Header.Set("X-Api-Key", "secret")
	if err := CheckRedirect(next, []*http.Request{first}); err != nil {
		t.Fatal(err)
	}
	if next.Header.Get("Authorization") != "" || next.Header.Get("X-Api-Key") != "" {
		t.Errorf("https to http on the same port kept %v", next.Header)
	}
}
