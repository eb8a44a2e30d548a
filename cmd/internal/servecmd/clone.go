package servecmd

import (
	"context"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/voices"
)

// cloneVoice is the clone pipeline of POST /v1/voices.
var cloneVoice CloneFunc = func(ctx context.Context, eng engine.Engine, dir string, req httpapi.CloneRequest) (*voices.Voice, error) {
	return nil, engine.Invalidf("cloning through drama serve is not available yet: use `drama encode`")
}
