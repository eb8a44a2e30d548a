package main

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/realclient"
)

// TestFishSDKConformance runs Fish Audio's own TypeScript SDK (npm
// fish-audio, pinned in scripts/package.json) against drama serve on the
// stand-in, paced at a quarter of real time: convert in every format and
// at another sample rate, refusals as the SDK's errors, ivc.create with
// the consent headers and without, reference_id, inline references,
// search, get, update, delete, convertRealtime over a text stream whose
// first audio comes before its last piece is sent, and a wrong API key's
// 401 on each.
func TestFishSDKConformance(t *testing.T) {
	node := realclient.Node(t, "fish-audio")
	clips := speechClips(t)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "full", "codec.pth"), []byte("stand-in codec"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := []string{"DRAMA_API_KEY=" + e2eEnvKey} // an admin key: the suite also plays a wrong one
	s := startServeRoot(t, root, append([]string{"TENSORFOLD_STANDIN_RTF=0.25"}, key...))
	res := node.Run(context.Background(), 3*time.Minute, key, "scripts/conformance/fish-sdk.mjs", s.url, clips[0], clips[1], clips[2])
	t.Log("\n" + strings.TrimSpace(res.Stdout))
	if res.Err != nil {
		t.Fatalf("%v\n%s\ndrama serve:\n%s", res.Err, res.Stderr, s.stderr)
	}
}

// BenchmarkFishLiveFirstAudio times, with Fish Audio's SDK against drama
// serve on the stand-in paced at real time, the first audio of
// convertRealtime from the moment the first sentence's end is sent, beside
// the first audio byte of convert for that sentence alone, alternating,
// DRAMA_SDK_BENCH_N of each (default 20) per benchmark iteration.
func BenchmarkFishLiveFirstAudio(b *testing.B) {
	t := testing.TB(b)
	node := realclient.Node(b, "fish-audio")
	key := []string{"DRAMA_API_KEY=" + e2eEnvKey}
	s := startServeEnv(t, append([]string{"TENSORFOLD_STANDIN_RTF=1"}, key...))
	defer s.stop(t)
	n := cmp.Or(os.Getenv("DRAMA_SDK_BENCH_N"), "20")
	for b.Loop() {
		res := node.Run(context.Background(), 5*time.Minute, key, "scripts/conformance/fish-sdk.mjs", s.url, "bench", n)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
		var r struct {
			LiveP50 float64 `json:"live_first_audio_p50_ms"`
			LiveP90 float64 `json:"live_first_audio_p90_ms"`
			TTSP50  float64 `json:"tts_first_audio_p50_ms"`
			TTSP90  float64 `json:"tts_first_audio_p90_ms"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
			b.Fatalf("%v: %q", err, res.Stdout)
		}
		b.ReportMetric(r.LiveP50, "live-p50-ms")
		b.ReportMetric(r.LiveP90, "live-p90-ms")
		b.ReportMetric(r.TTSP50, "tts-p50-ms")
		b.ReportMetric(r.TTSP90, "tts-p90-ms")
		b.ReportMetric(r.LiveP50-r.TTSP50, "diff-p50-ms")
	}
}
