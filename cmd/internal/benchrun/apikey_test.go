package benchrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine/bench"
)

// fakeServeEnv makes this test binary a drama serve with API keys: it
// requires the key it inherits in DRAMA_API_KEY (and refuses to start
// without one), as drama serve does when DRAMA_API_KEY is set.
const fakeServeEnv = "DRAMA_SHARED_TEST_FAKE_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeServeEnv) == "1" {
		os.Exit(fakeServe(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeServe(args []string) int {
	addr := ""
	for i, a := range args {
		if a == "--addr" && i+1 < len(args) {
			addr = args[i+1]
		}
	}
	key := os.Getenv(cmdutil.APIKeyEnv)
	if addr == "" || key == "" {
		fmt.Fprintln(os.Stderr, "fake serve: want --addr and DRAMA_API_KEY")
		return 2
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ready" || r.URL.Path == "/health":
			w.Write([]byte(`{"ready":true}`))
		case r.Header.Get("Authorization") != "Bearer "+key:
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"a valid API key is required"}}`))
		case r.URL.Path == "/v1/voices":
			w.Write([]byte(`{"data":[{"id":"narrator"}]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})}
	go srv.Serve(ln)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	return 0
}

// The drama serve bench and qualify start gets the key of the command,
// and the run's client sends it.
func TestStartServeSharesTheKey(t *testing.T) {
	t.Setenv(fakeServeEnv, "1")
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "DRAMA_HOME", t.TempDir(), cmdutil.APIKeyEnv, "dk-run")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	served, err := StartServe(ctx, f, ServeOptions{Drama: exe, ReadyTimeout: 30 * time.Second, Grace: 5 * time.Second})
	if err != nil {
		t.Fatalf("the server did not start with the key: %v", err)
	}
	defer served.Stop()
	if ids, err := Client(f, served.URL).Voices(ctx); err != nil || len(ids) != 1 {
		t.Fatalf("the run's client with the key: %v %v", ids, err)
	}

	// a command without the key, against a server that requires one
	f0 := cmdtest.Factory(ios)
	_, err = Client(f0, served.URL).Voices(ctx)
	if !errors.As(err, new(*bench.AuthError)) {
		t.Fatalf("without the key: want an AuthError, got %v", err)
	}
	if msg := AuthAdvice(f0, err).Error(); !strings.Contains(msg, "requires an API key: set DRAMA_API_KEY to one of its keys with scope speak") {
		t.Errorf("advice: %s", msg)
	}
	if err := served.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}
