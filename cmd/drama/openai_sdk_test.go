package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/realclient"
)

// TestOpenAISDKConformance runs OpenAI's own Node SDK (npm openai, pinned in
// scripts/package.json) against drama serve on the stand-in, paced at a
// quarter of real time: models.list and retrieve; speech as wav, pcm, whole
// and SSE; the default request streamed; an unknown voice; a synthesis that
// fails midway, which every read must report; 8 requests at once.
func TestOpenAISDKConformance(t *testing.T) {
	node := realclient.Node(t, "openai")
	s := startServeEnv(t, []string{"TENSORFOLD_STANDIN_RTF=0.25"}, "--max-queue", "16")
	res := node.Run(context.Background(), 3*time.Minute, nil, "scripts/conformance/openai-speech.mjs", s.url+"/v1", "drama-3-full")
	t.Log("\n" + strings.TrimSpace(res.Stdout))
	if res.Err != nil {
		t.Fatalf("%v\n%s\ndrama serve:\n%s", res.Err, res.Stderr, s.stderr)
	}
}
