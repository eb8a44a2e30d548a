package host_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/host"
)

func openStarted(t *testing.T, env ...string) *host.Plugin {
	t.Helper()
	p, err := host.Open(context.Background(), enginetest.TestBinaryPlugin(t, "fake"), host.Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background(), time.Second) })
	if err := p.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// direct is what the sized fake makes in this process.
func direct(t *testing.T, req engine.SynthesisRequest) enginetest.Result {
	t.Helper()
	e := sizedFake()
	if err := e.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := enginetest.Synthesize(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSizedAudioComesOverTheLink: a whole synthesis whose header says its
// size reaches the host over the PCM link, byte for byte what the engine
// made; a streamed one comes over gRPC as before.
func TestSizedAudioComesOverTheLink(t *testing.T) {
	p := openStarted(t, enginetest.ServeEnv+"=sized")
	whole := engine.SynthesisRequest{Input: strings.Repeat("A line long enough for many chunks. ", 40)}
	for range 3 {
		before := p.LinkBytes()
		r, err := enginetest.Synthesize(context.Background(), p, whole)
		if err != nil {
			t.Fatal(err)
		}
		want := direct(t, whole)
		if !bytes.Equal(r.PCM, want.PCM) || r.Final.Reason != want.Final.Reason || !r.Header.Sized {
			t.Fatalf("got %d bytes (%v, sized %v), want %d (%v)", len(r.PCM), r.Final.Reason, r.Header.Sized, len(want.PCM), want.Final.Reason)
		}
		if got := p.LinkBytes() - before; got != int64(len(r.PCM)) {
			t.Fatalf("%d of %d bytes came over the link", got, len(r.PCM))
		}
	}
	streamed := whole
	streamed.Stream = true
	before := p.LinkBytes()
	r, err := enginetest.Synthesize(context.Background(), p, streamed)
	if err != nil || len(r.PCM) == 0 {
		t.Fatalf("streamed: %d bytes, %v", len(r.PCM), err)
	}
	if p.LinkBytes() != before {
		t.Fatalf("a stream came over the link (%d bytes): its size is not known ahead", p.LinkBytes()-before)
	}
}

// TestPluginLeavingTheLinkStillSpeaks: a plugin built before the link
// ignores it; its audio comes over gRPC, whole.
func TestPluginLeavingTheLinkStillSpeaks(t *testing.T) {
	p := openStarted(t, nolinkEnv+"=1")
	req := engine.SynthesisRequest{Input: strings.Repeat("Another line. ", 30)}
	r, err := enginetest.Synthesize(context.Background(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	if want := direct(t, req); !bytes.Equal(r.PCM, want.PCM) {
		t.Fatalf("got %d bytes, want %d", len(r.PCM), len(want.PCM))
	}
	if p.LinkBytes() != 0 {
		t.Fatalf("%d bytes over a link the plugin never took", p.LinkBytes())
	}
}
