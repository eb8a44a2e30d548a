package encodecmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// A drama serve with API keys: POST /v1/voices needs a key of scope voices;
// dk-speak is a key of scope speak.
func TestEncodeThroughServerSendsAPIKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer dk-voices":
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"id":"anna-example","name":"Anna Example","origin":"clone","source":"consented","references":2,"frames":842,"seconds":39.1}`))
		case "Bearer dk-speak":
			w.Header().Set("WWW-Authenticate", `Bearer realm="drama serve", error="insufficient_scope", scope="voices"`)
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":{"message":"the key ops has scope speak; POST /v1/voices needs scope voices"}}`))
		default:
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"a valid API key is required"}}`))
		}
	}))
	defer srv.Close()
	dir := preparedDir(t, true)
	encode := func(key string) error {
		e := newEnv(t)
		getenv := e.opts.F.Getenv
		e.opts.F.Getenv = func(k string) string {
			if k == cmdutil.APIKeyEnv {
				return key
			}
			return getenv(k)
		}
		e.opts.Manifest, e.opts.Server = dir, srv.URL
		return run(context.Background(), e.opts)
	}
	if err := encode("dk-voices"); err != nil {
		t.Fatalf("with a key of scope voices: %v", err)
	}
	for key, want := range map[string]string{
		"":         "requires an API key: set DRAMA_API_KEY to one of its keys with scope voices",
		"dk-speak": "needs scope voices; the key in DRAMA_API_KEY lacks the scope this request needs: set DRAMA_API_KEY to a key with scope voices",
	} {
		if err := encode(key); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DRAMA_API_KEY=%q: want %q, got %v", key, want, err)
		}
	}
}
