package clone

import (
	"context"
	"fmt"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/voices"
)

// ClipID names the i-th reference to the encoder: ref-01, ref-02, ...
func ClipID(i int) string { return fmt.Sprintf("ref-%02d", i+1) }

// encode encodes refs through enc with opts.Install and checks what comes
// back: codes for every reference, in order, ten codebooks of
// ceil(samples / 2048) frames, every code in its codebook's range. A
// failure is an *EncodeError, unless ctx ended.
func encode(ctx context.Context, enc Encoder, refs []Reference, opts Options) ([]voices.Codes, error) {
	req := engine.EncodeRequest{Install: opts.Install}
	for i, r := range refs {
		req.Clips = append(req.Clips, engine.Clip{ID: ClipID(i), Data: r.WAV, Text: r.Text})
	}
	started := -1
	got, err := enc.Encode(ctx, req, func(p engine.EncodeProgress) {
		if opts.Progress == nil || p.Index < 0 || p.Index >= len(refs) {
			return
		}
		switch {
		case p.Fraction >= 1:
			opts.Progress(Progress{Index: p.Index, Count: len(refs), Ref: refs[p.Index], Done: true})
		case p.Index != started:
			started = p.Index
			opts.Progress(Progress{Index: p.Index, Count: len(refs), Ref: refs[p.Index]})
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &EncodeError{Err: err}
	}
	if len(got) != len(refs) {
		return nil, &EncodeError{Err: fmt.Errorf("want codes for %d references, got %d", len(refs), len(got))}
	}
	out := make([]voices.Codes, len(refs))
	for i, r := range refs {
		if got[i].ClipID != "" && got[i].ClipID != ClipID(i) {
			return nil, &EncodeError{Err: fmt.Errorf("result %d: want clip %s, got %s", i, ClipID(i), got[i].ClipID)}
		}
		if err := checkCodes(r, got[i]); err != nil {
			return nil, &EncodeError{Ref: r.Name, Err: err}
		}
		out[i] = voices.Codes(got[i].Codes)
	}
	return out, nil
}

// checkCodes checks a reference's codes: ten codebooks of
// ceil(samples / 2048) frames, every code in its codebook's range.
func checkCodes(r Reference, ec engine.EncodedClip) error {
	frames := (r.Samples + voices.SamplesPerFrame - 1) / voices.SamplesPerFrame
	switch {
	case ec.Samples != 0 && ec.Samples != int64(r.Samples):
		return fmt.Errorf("samples: want %d, got %d", r.Samples, ec.Samples)
	case len(ec.Codes) != voices.NumCodebooks:
		return fmt.Errorf("codebooks: want %d, got %d", voices.NumCodebooks, len(ec.Codes))
	case ec.Frames != 0 && ec.Frames != frames:
		return fmt.Errorf("frames: want %d (ceil(%d samples / 2048)), got %d", frames, r.Samples, ec.Frames)
	}
	for c, row := range ec.Codes {
		if len(row) != frames {
			return fmt.Errorf("codebook %d: want %d frames (ceil(%d samples / 2048)), got %d", c, frames, r.Samples, len(row))
		}
		limit := voices.CodebookSize(c)
		for t, v := range row {
			if v < 0 || v >= limit {
				return fmt.Errorf("codebook %d frame %d: want a code in 0..%d, got %d", c, t, limit-1, v)
			}
		}
	}
	return nil
}
