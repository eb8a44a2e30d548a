// Package httpapitest serves drama serve's HTTP API over an engine the
// test holds, for the tests of the commands that talk to it (tests only):
// the API over a real engine/pool of that one engine, and a loopback
// server for the test's length.
package httpapitest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/pool/pooltest"
)

// Over returns the API, with cfg's settings, over eng alone: a pool of
// one engine, always ready, where up to httpapi.DefaultMaxQueue requests
// wait (as drama serve's by default).
func Over(t testing.TB, eng engine.Speech, cfg httpapi.Config) *httpapi.Server {
	t.Helper()
	return httpapi.New(pooltest.New(t, pool.Options{MaxQueue: httpapi.DefaultMaxQueue}, pooltest.NewMember(eng)), cfg)
}

// Fake starts fake for the test's length and returns the API, with cfg's
// settings and the fake's capabilities, over it (see Over).
func Fake(t testing.TB, fake *enginetest.Fake, cfg httpapi.Config) *httpapi.Server {
	t.Helper()
	if err := fake.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Stop(context.Background(), engine.StopRequest{}) })
	cfg.Caps = fake.Desc.Capabilities
	return Over(t, fake, cfg)
}

// Serve serves h on a loopback port for the test's length.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}
