package main

import (
	"context"
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
// search, get, update, delete, and convertRealtime over a text stream
// whose first audio comes before its last piece is sent.
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
	s := startServeRoot(t, root, []string{"TENSORFOLD_STANDIN_RTF=0.25"})
	res := node.Run(context.Background(), 3*time.Minute, nil, "scripts/conformance/fish-sdk.mjs", s.url, clips[0], clips[1], clips[2])
	t.Log("\n" + strings.TrimSpace(res.Stdout))
	if res.Err != nil {
		t.Fatalf("%v\n%s\ndrama serve:\n%s", res.Err, res.Stderr, s.stderr)
	}
}
