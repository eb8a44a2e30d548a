package main

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/realclient"
)

// TestOpenAISDKConformance runs OpenAI's own Node SDK (npm openai, pinned in
// scripts/package.json) against drama serve on the stand-in, paced at a
// quarter of real time: models.list and retrieve; speech as wav, pcm, whole
// and SSE; the default request streamed; the built-in voice of a fresh
// install and a --voice-alias; an unknown voice; a synthesis that
// fails midway, which every read must report; 8 requests at once.
func TestOpenAISDKConformance(t *testing.T) {
	node := realclient.Node(t, "openai")
	s := startServeEnv(t, []string{"TENSORFOLD_STANDIN_RTF=0.25"}, "--max-queue", "16", "--voice-alias", "nova=default")
	res := node.Run(context.Background(), 3*time.Minute, nil, "scripts/conformance/openai-speech.mjs", s.url+"/v1", "drama-3-full")
	t.Log("\n" + strings.TrimSpace(res.Stdout))
	if res.Err != nil {
		t.Fatalf("%v\n%s\ndrama serve:\n%s", res.Err, res.Stderr, s.stderr)
	}
}

// BenchmarkSDKDefaultFirstByte times, with OpenAI's Node SDK against drama
// serve on the stand-in paced at a quarter of real time, the first audio
// byte of the SDK's default request (no stream field) and of the same
// request with "stream": true, alternating, DRAMA_SDK_BENCH_N of each
// (default 30) per benchmark iteration.
func BenchmarkSDKDefaultFirstByte(b *testing.B) {
	t := testing.TB(b)
	node := realclient.Node(b, "openai")
	s := startServeEnv(t, []string{"TENSORFOLD_STANDIN_RTF=0.25"})
	defer s.stop(t)
	n := cmp.Or(os.Getenv("DRAMA_SDK_BENCH_N"), "30")
	for b.Loop() {
		res := node.Run(context.Background(), 5*time.Minute, nil, "scripts/conformance/openai-speech.mjs", s.url+"/v1", "drama-3-full", "bench", n)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		var r struct {
			DefaultP50 float64 `json:"default_p50_ms"`
			StreamP50  float64 `json:"stream_true_p50_ms"`
			DefaultP99 float64 `json:"default_p99_ms"`
			StreamP99  float64 `json:"stream_true_p99_ms"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
			b.Fatalf("%v: %q", err, res.Stdout)
		}
		b.ReportMetric(r.DefaultP50, "default-p50-ms")
		b.ReportMetric(r.StreamP50, "stream-true-p50-ms")
		b.ReportMetric(r.DefaultP50-r.StreamP50, "diff-p50-ms")
		b.ReportMetric(r.DefaultP99, "default-p99-ms")
		b.ReportMetric(r.StreamP99, "stream-true-p99-ms")
	}
}
