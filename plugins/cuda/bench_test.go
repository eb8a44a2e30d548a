package main

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/host"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/nativetest"
	"github.com/drama-tts/drama/engine/native/standin"
)

// benchStart is a start request for benchmarks: the stand-in unpaced.
func benchStart(b *testing.B) engine.StartRequest {
	req := nativetest.StartRequest(b, native.CUDA, standinBin)
	req.Env = []string{standin.EnvLoadTime + "=50ms"}
	return req
}

// openPlugin starts the real plugin binary and its engine.
func openPlugin(b *testing.B) *host.Plugin {
	ctx := context.Background()
	p, err := host.Open(ctx, pluginBin, host.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close(context.Background(), 5*time.Second) })
	if err := p.Start(ctx, benchStart(b), nil); err != nil {
		b.Fatal(err)
	}
	return p
}

// launchDirect starts the stand-in under the supervisor and returns a
// contract client for it.
func launchDirect(b *testing.B) *native.Client {
	req := benchStart(b)
	port := freePort(b)
	p, err := native.Launch(context.Background(), native.Config{
		Binary: standinBin, Port: port, Env: native.Environ(nil, req.Env...),
		Args: native.CUDA.ServeArgs(native.ServeOptions{Port: port, Variant: "nvfp4", Voices: req.VoicesDir}),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Stop(time.Second) })
	return native.NewClient(p.Addr())
}

func freePort(b *testing.B) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// percentile returns the q-quantile of ds in milliseconds.
func percentile(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))]) / 1e6
}

// percentiles reports p50 and p95 of ds in milliseconds, with a prefix.
func percentiles(b *testing.B, prefix string, ds []time.Duration) {
	b.ReportMetric(percentile(ds, 0.50), prefix+"p50-ms")
	b.ReportMetric(percentile(ds, 0.95), prefix+"p95-ms")
	b.ReportMetric(0, "ns/op")
}

const shortText = "Hello there, this is a short line."

// firstChunkDirect times a streamed request to the stand-in's first chunk.
func firstChunkDirect(b *testing.B, c *native.Client) time.Duration {
	start := time.Now()
	st, err := c.Open(context.Background(), &native.SpeechRequest{Input: shortText, Voice: "alice", Stream: true, ResponseFormat: "pcm"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.Next(); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	drainNative(b, st)
	return d
}

// firstChunkPlugin times the same request through the plugin.
func firstChunkPlugin(b *testing.B, p *host.Plugin) time.Duration {
	start := time.Now()
	as, err := p.Synthesize(context.Background(), engine.SynthesisRequest{Input: shortText, Voice: "alice", Stream: true})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := as.Next(); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	drainEngine(b, as)
	return d
}

// BenchmarkFirstChunk: time from the request to the first PCM chunk,
// streamed, talking to the stand-in directly and through the plugin, one
// of each per iteration so both see the same machine load. "added" is the
// per-iteration difference.
func BenchmarkFirstChunk(b *testing.B) {
	linuxOnlyB(b)
	c, p := launchDirect(b), openPlugin(b)
	var direct, plugin, added []time.Duration
	for b.Loop() {
		d, q := firstChunkDirect(b, c), firstChunkPlugin(b, p)
		direct, plugin, added = append(direct, d), append(plugin, q), append(added, q-d)
	}
	percentiles(b, "direct-", direct)
	percentiles(b, "plugin-", plugin)
	b.ReportMetric(percentile(added, 0.5), "added-p50-ms")
}

// BenchmarkRelay: a long synthesis streamed to its end, directly and
// through the plugin in turn; reports how many times faster than real time
// the audio arrives each way.
func BenchmarkRelay(b *testing.B) {
	linuxOnlyB(b)
	text := strings.Repeat("A long text to relay at full speed. ", 25) // clipped at 1,024 frames: 47.5 s
	c, p := launchDirect(b), openPlugin(b)
	var audio, tDirect, tPlugin time.Duration
	for b.Loop() {
		start := time.Now()
		st, err := c.Open(context.Background(), &native.SpeechRequest{Input: text, Stream: true, ResponseFormat: "pcm"})
		if err != nil {
			b.Fatal(err)
		}
		audio += drainNative(b, st)
		mid := time.Now()
		as, err := p.Synthesize(context.Background(), engine.SynthesisRequest{Input: text, Stream: true})
		if err != nil {
			b.Fatal(err)
		}
		drainEngine(b, as)
		tDirect, tPlugin = tDirect+mid.Sub(start), tPlugin+time.Since(mid)
	}
	b.ReportMetric(audio.Seconds()/tDirect.Seconds(), "direct-x-realtime")
	b.ReportMetric(audio.Seconds()/tPlugin.Seconds(), "plugin-x-realtime")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPluginStart: handshake and Describe of the real plugin binary.
func BenchmarkPluginStart(b *testing.B) {
	linuxOnlyB(b)
	ds := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		p, err := host.Open(context.Background(), pluginBin, host.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Describe(context.Background()); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		p.Close(context.Background(), time.Second)
	}
	percentiles(b, "", ds)
}

func pcmDuration(n int) time.Duration {
	return time.Duration(n/native.BytesPerSample) * time.Second / native.SampleRate
}

func drainNative(b *testing.B, st *native.Stream) time.Duration {
	defer st.Close()
	n := 0
	for {
		p, err := st.Next()
		if errors.Is(err, io.EOF) {
			return pcmDuration(n)
		}
		if err != nil {
			b.Fatal(err)
		}
		n += len(p)
	}
}

func drainEngine(b *testing.B, as engine.AudioStream) time.Duration {
	defer as.Close()
	n := 0
	for {
		p, err := as.Next()
		if errors.Is(err, io.EOF) {
			return pcmDuration(n)
		}
		if err != nil {
			b.Fatal(err)
		}
		n += len(p)
	}
}

func linuxOnlyB(b *testing.B) {
	if testing.Short() {
		b.Skip("starts processes")
	}
	if runtime.GOOS != "linux" {
		b.Skip("the CUDA plugin runs on Linux")
	}
}
