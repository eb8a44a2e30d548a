package hub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

const redirCommit = "0123456789abcdef0123456789abcdef01234567"

// dataServer answers a ranged GET of a 10-byte file and counts the
// requests that carried Authorization.
func dataServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var authorized atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			authorized.Add(1)
		}
		w.Header().Set("Content-Range", "bytes 0-9/10")
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte("0123456789"))
	}))
	t.Cleanup(ts.Close)
	return ts, &authorized
}

func getRange(t *testing.T, c *Client, repo, u string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rb, err := c.GetRange(ctx, repo, u, 0, 9, 10)
	if err != nil {
		t.Fatal(err)
	}
	rb.Close()
}

// A hub on 127.0.0.1:A answers the resolve URL with a 302 to 127.0.0.1:B:
// the same host name, another port, another server. B gets no token.
func TestTokenNotSentToOtherPort(t *testing.T) {
	b, leaked := dataServer(t)
	var sent atomic.Int64
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer hf_secret" {
			sent.Add(1)
		}
		http.Redirect(w, r, b.URL+"/cdn/blob", http.StatusFound)
	}))
	t.Cleanup(a.Close)
	c := New(a.URL, "hf_secret", 2)
	getRange(t, c, repoA, a.URL+"/"+repoA+"/resolve/"+redirCommit+"/f.bin")
	if sent.Load() != 1 {
		t.Fatalf("the endpoint got the token on %d requests, want 1", sent.Load())
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("127.0.0.1:B got the token on %d requests from a redirect off 127.0.0.1:A", n)
	}
}

// An https endpoint that redirects to plain http: the token would cross
// the network in the clear.
func TestTokenNotSentOnDowngrade(t *testing.T) {
	b, leaked := dataServer(t)
	a := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, b.URL+"/cdn/blob", http.StatusFound)
	}))
	t.Cleanup(a.Close)
	c := New(a.URL, "hf_secret", 2)
	c.Data.Transport = a.Client().Transport // trust the test certificate
	getRange(t, c, repoA, a.URL+"/"+repoA+"/resolve/"+redirCommit+"/f.bin")
	if n := leaked.Load(); n != 0 {
		t.Errorf("an https to http redirect carried the token on %d requests", n)
	}
}

// The Hub redirects a renamed repository's URLs on its own origin; the
// new name is private, so the token must follow: for the data GET and for
// an API call.
func TestTokenKeptOnSameOriginRedirect(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/old-name/model/resolve/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/"+repoA+"/resolve/"+redirCommit+"/f.bin", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/"+repoA+"/resolve/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer hf_secret" {
			http.Error(w, "private", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Range", "bytes 0-9/10")
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte("0123456789"))
	})
	mux.HandleFunc("/api/models/old-name/model/refs", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/api/models/"+repoA+"/refs", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/api/models/"+repoA+"/refs", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer hf_secret" {
			http.Error(w, "private", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"branches":[{"name":"main","targetCommit":"` + redirCommit + `"}]}`))
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c := New(ts.URL, "hf_secret", 2)
	c.Retries = 0
	getRange(t, c, "old-name/model", ts.URL+"/old-name/model/resolve/"+redirCommit+"/f.bin")
	refs, err := c.Refs(context.Background(), "old-name/model")
	if err != nil || refs["main"] != redirCommit {
		t.Errorf("refs through a same-origin redirect: got %v, %v", refs, err)
	}
}
