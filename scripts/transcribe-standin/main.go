// Command transcribe-standin serves the stand-in speech recognition server
// (voices/transcribe/transcribetest) on an address of your choice, hearing
// the words the stand-in engine's speech carries (standin.SpokenText), so
// that --transcribe-url examples (drama bench, drama qualify) run without a
// real recogniser:
//
//	go run ./scripts/transcribe-standin -addr 127.0.0.1:8080
//
// It prints the address once it listens and serves until interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/drama-tts/drama/engine/native/standin"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "transcribe-standin:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	ts := transcribetest.New()
	defer ts.Close()
	ts.Text = transcribetest.Hear(standin.SpokenText)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (stop what listens there, or give -addr)", addr, err)
	}
	srv := &http.Server{Handler: ts.Config.Handler}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	fmt.Printf("transcribing at http://%s/v1/audio/transcriptions\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
