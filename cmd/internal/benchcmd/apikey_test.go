package benchcmd

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
)

// keyedStandin is a drama serve with one API key over the stand-in: 401
// to a request without "Authorization: Bearer key".
func keyedStandin(t *testing.T, key string) string {
	t.Helper()
	u, _ := url.Parse(standin_(t, 0.05))
	proxy := httputil.NewSingleHostReverseProxy(u)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"a valid API key is required"}}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestBenchSendsAPIKey(t *testing.T) {
	srv := keyedStandin(t, "dk-bench")
	corpus := writeCorpus(t, "Hi.")
	run := func(env ...string) error {
		ios, _, _, _ := cmdtest.IOStreams()
		f := cmdtest.Factory(ios, append([]string{"DRAMA_HOME", t.TempDir()}, env...)...)
		return cmdtest.Execute(NewCmd(f, nil), "--server", srv, "--corpus", corpus, "--warmup", "0", "--passes", "1", "--out", t.TempDir())
	}
	if err := run(cmdutil.APIKeyEnv, "dk-bench"); err != nil {
		t.Fatalf("with DRAMA_API_KEY: %v", err)
	}
	err := run()
	if err == nil || !strings.Contains(err.Error(), "answered 401") || !strings.Contains(err.Error(), "set DRAMA_API_KEY to one of its keys with scope speak") ||
		strings.Contains(err.Error(), "is drama serve running") {
		t.Errorf("without DRAMA_API_KEY: want the 401 with advice, got %v", err)
	}
}
