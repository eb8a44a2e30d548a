package encodecmd

import (
	"context"
	"fmt"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/voices"
)

// encodeRefs encodes every reference through the engine and checks what
// comes back.
func encodeRefs(ctx context.Context, opts *Options, refs []ref) ([]voices.Codes, error) {
	install, err := installFor(opts)
	if err != nil {
		return nil, err
	}
	open := opts.OpenEngine
	if open == nil {
		open = openPlugin
	}
	eng, release, err := open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer release()
	return encodeWith(ctx, eng, install, refs, opts.F)
}

// encodeWith encodes refs through eng and checks the codes. Failures are
// exit 4 (cmdutil.EngineError) unless ctx was cancelled.
func encodeWith(ctx context.Context, eng engine.Engine, install engine.Install, refs []ref, f *cmdutil.Factory) ([]voices.Codes, error) {
	req := engine.EncodeRequest{Install: install}
	for i, r := range refs {
		req.Clips = append(req.Clips, engine.Clip{ID: clipID(i), Data: r.Data, Text: r.Text})
	}
	started := -1
	got, err := eng.Encode(ctx, req, func(p engine.EncodeProgress) {
		switch {
		case p.Fraction >= 1:
			f.Infof("encoded %d/%d %s", p.Index+1, p.Count, refName(refs, p.Index))
		case p.Index != started:
			started = p.Index
			f.Infof("encoding %d/%d %s (%.1f s)", p.Index+1, p.Count, refName(refs, p.Index), seconds(refs, p.Index))
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, cmdutil.EngineError(fmt.Errorf("encode: %w", err))
	}
	if len(got) != len(refs) {
		return nil, cmdutil.EngineError(fmt.Errorf("encode: want codes for %d references, got %d", len(refs), len(got)))
	}
	out := make([]voices.Codes, len(refs))
	for i, r := range refs {
		if got[i].ClipID != "" && got[i].ClipID != clipID(i) {
			return nil, cmdutil.EngineError(fmt.Errorf("encode: result %d: want clip %s, got %s", i, clipID(i), got[i].ClipID))
		}
		if err := checkCodes(r, got[i]); err != nil {
			return nil, cmdutil.EngineError(fmt.Errorf("encode %s: %w", r.Name, err))
		}
		out[i] = voices.Codes(got[i].Codes)
	}
	return out, nil
}

// clipID names the i-th reference to the engine.
func clipID(i int) string { return fmt.Sprintf("ref-%02d", i+1) }

func seconds(refs []ref, i int) float64 {
	if i < 0 || i >= len(refs) {
		return 0
	}
	return float64(refs[i].Samples) / voices.SampleRate
}

func refName(refs []ref, i int) string {
	if i < 0 || i >= len(refs) {
		return "?"
	}
	return refs[i].Name
}

// checkCodes checks a reference's codes: ten codebooks of
// ceil(samples / 2048) frames, every code in its codebook's range.
func checkCodes(r ref, ec engine.EncodedClip) error {
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
