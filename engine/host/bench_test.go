package host_test

import (
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/host"
)

// percentiles reports p50 and p95 of ds in milliseconds.
func percentiles(b *testing.B, ds []time.Duration, unit string) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-"+unit)
	b.ReportMetric(at(0.95), "p95-"+unit)
}

// BenchmarkPluginStart is a plugin's start as drama pays it: checksum,
// process start, go-plugin handshake with AutoMTLS, and one Describe; then
// Close. The plugin is this test binary serving the fake engine, or the
// plugin binary named by $DRAMA_BENCH_PLUGIN (e.g. bin/drama-engine-cuda).
func BenchmarkPluginStart(b *testing.B) {
	path := os.Getenv("DRAMA_BENCH_PLUGIN")
	env := []string{}
	if path == "" {
		path = enginetest.TestBinaryPlugin(b, "fake")
		env = append(env, enginetest.ServeEnv+"=fake")
	}
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		p, err := host.Open(context.Background(), path, host.Options{Env: env})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Describe(context.Background()); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
		p.Close(context.Background(), time.Second)
	}
	percentiles(b, ds, "ms")
}

// firstChunk times one streamed synthesis from the request to its first
// audio chunk, then reads it to the end.
func firstChunk(b *testing.B, e engine.Engine, req engine.SynthesisRequest) time.Duration {
	t0 := time.Now()
	as, err := e.Synthesize(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	defer as.Close()
	if _, err := as.Next(); err != nil {
		b.Fatal(err)
	}
	d := time.Since(t0)
	for {
		if _, err := as.Next(); errors.Is(err, io.EOF) {
			return d
		} else if err != nil {
			b.Fatal(err)
		}
	}
}

func startFake(b *testing.B, e engine.Engine) {
	if err := e.Start(context.Background(), engine.StartRequest{}, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Stop(context.Background(), engine.StopRequest{}) })
}

// BenchmarkFirstChunk times the first audio chunk of a streamed synthesis
// through a plugin process (sub-benchmark "plugin") and from the same
// engine called directly in the process ("direct"): the difference is the
// time the plugin layer adds.
func BenchmarkFirstChunk(b *testing.B) {
	req := engine.SynthesisRequest{Input: "A short line to speak.", Stream: true}
	b.Run("direct", func(b *testing.B) {
		f := enginetest.NewFake()
		f.FrameDelay = 0
		startFake(b, f)
		var ds []time.Duration
		for b.Loop() {
			ds = append(ds, firstChunk(b, f, req))
		}
		percentiles(b, ds, "ms")
	})
	b.Run("plugin", func(b *testing.B) {
		p := enginetest.Subprocess(b, enginetest.TestBinaryPlugin(b, "fake"), enginetest.ServeEnv+"=fast")
		startFake(b, p)
		var ds []time.Duration
		for b.Loop() {
			ds = append(ds, firstChunk(b, p, req))
		}
		percentiles(b, ds, "ms")
	})
}

// BenchmarkRelay moves 47.6 s of audio (4.2 MB of PCM, 1025 frames) per
// synthesis through a plugin process and reports the speed as a multiple
// of real time.
func BenchmarkRelay(b *testing.B) {
	p := enginetest.Subprocess(b, enginetest.TestBinaryPlugin(b, "fake"), enginetest.ServeEnv+"=fast")
	startFake(b, p)
	// The fake makes 1 + runes/4 frames.
	req := engine.SynthesisRequest{Input: strings.Repeat("abcd", 1024)}
	var audio float64
	b.SetBytes(1025 * engine.SamplesPerFrame * 2)
	for b.Loop() {
		r, err := enginetest.Synthesize(context.Background(), p, req)
		if err != nil {
			b.Fatal(err)
		}
		audio += float64(len(r.PCM)/2) / engine.SampleRate
	}
	b.ReportMetric(audio/b.Elapsed().Seconds(), "x-realtime")
}
