// Package clonetest gives the tests of the clone pipeline and of the
// commands that run it an encoder that needs no engine.
package clonetest

import (
	"bytes"
	"context"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/internal/model"
	"github.com/drama-tts/drama/voices/clip"
)

// Encoder encodes each clip, read as WAV, into codes of the codec's shape
// (10 codebooks, a frame per model.SamplesPerFrame samples, codes in
// 0..1023), and lets a test spoil its results or fail. It is not safe for
// concurrent use.
type Encoder struct {
	Calls int                       // Encode calls so far
	Req   engine.EncodeRequest      // the last request
	Spoil func(*engine.EncodedClip) // if set, changes each result
	Fail  error                     // if set, Encode returns it
}

// Encode implements the encoding half of engine.Engine.
func (e *Encoder) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	e.Calls++
	e.Req = req
	if e.Fail != nil {
		return nil, e.Fail
	}
	var out []engine.EncodedClip
	for i, c := range req.Clips {
		a, err := clip.ReadWAV(bytes.NewReader(c.Data))
		if err != nil {
			return nil, engine.Invalidf("clip %s: %v", c.ID, err)
		}
		frames := model.Frames(a.Frames())
		codes := make([][]int, 10)
		for cb := range codes {
			codes[cb] = make([]int, frames)
			for t := range codes[cb] {
				codes[cb][t] = (t*31 + cb*7 + i) % 1024
			}
		}
		ec := engine.EncodedClip{ClipID: c.ID, Text: c.Text, Codes: codes, Frames: frames, Samples: int64(a.Frames())}
		if e.Spoil != nil {
			e.Spoil(&ec)
		}
		if progress != nil {
			progress(engine.EncodeProgress{ClipID: c.ID, Index: i, Count: len(req.Clips), Fraction: 1, Stage: "done"})
		}
		out = append(out, ec)
	}
	return out, nil
}
