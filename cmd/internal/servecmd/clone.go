package servecmd

import (
	"context"

	"github.com/drama-tts/drama/cmd/internal/encodecmd"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/voices"
)

// cloneVoice is the clone pipeline of POST /v1/voices: drama encode's, so a
// voice cloned through the API and one cloned on the command line are made
// the same way.
func cloneVoice(ctx context.Context, eng engine.Engine, install engine.Install, dir string, req httpapi.CloneRequest) (*voices.Voice, error) {
	return encodecmd.Clone(ctx, eng, install, dir, req)
}
