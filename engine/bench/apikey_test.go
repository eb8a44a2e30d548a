package bench

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/drama-tts/drama/engine/native/standin"
)

// keyed is a drama serve with API keys over the stand-in: 401 without
// "Authorization: Bearer key" (the probes excepted), 403 for the key
// forbidden.
func keyed(t *testing.T, key, forbidden string) string {
	t.Helper()
	u, _ := url.Parse(standinURL(t, standin.Options{}))
	proxy := httputil.NewSingleHostReverseProxy(u)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch a := r.Header.Get("Authorization"); {
		case r.URL.Path == "/ready" || r.URL.Path == "/health":
			w.Write([]byte(`{"ready":true}`))
		case a == "Bearer "+key && r.URL.Path == "/v1/voices":
			w.Write([]byte(`{"data":[{"id":"narrator"}]}`))
		case a == "Bearer "+key:
			proxy.ServeHTTP(w, r) // the stand-in speaks
		case a == "Bearer "+forbidden:
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":{"message":"the key lacks scope speak"}}`))
		default:
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"a valid API key is required"}}`))
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestClientSendsAPIKey(t *testing.T) {
	srv := keyed(t, "dk-good", "dk-other")
	ctx := context.Background()
	c := &Client{URL: srv, APIKey: "dk-good"}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.Speak(ctx, "hello", "", Whole)
	if err != nil || !res.Valid() {
		t.Fatalf("with the key: %v %+v", err, res)
	}
	if _, err := c.Voices(ctx); err != nil {
		t.Fatalf("voices with the key: %v", err)
	}
	for key, status := range map[string]int{"": 401, "dk-wrong": 401, "dk-other": 403} {
		c := &Client{URL: srv, APIKey: key}
		_, err := c.Speak(ctx, "hello", "", Streamed)
		var ae *AuthError
		if !errors.As(err, &ae) || ae.Status != status || ae.Route != "POST /v1/audio/speech" || ae.Message == "" {
			t.Errorf("key %q: want an AuthError %d naming the route, got %v", key, status, err)
		}
		if _, err := c.Voices(ctx); !errors.As(err, &ae) || ae.Status != status {
			t.Errorf("key %q: voices: want an AuthError %d, got %v", key, status, err)
		}
	}
}
