package encodecmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/clone"
	"github.com/drama-tts/drama/voices"
)

// pluginEncoder opens the engine that encodes (--plugin, or
// Options.OpenEngine) when the references are ready, and closes it after.
type pluginEncoder struct{ opts *Options }

func (p *pluginEncoder) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	open := p.opts.OpenEngine
	if open == nil {
		open = openPlugin
	}
	eng, release, err := open(ctx, p.opts)
	if err != nil {
		return nil, err
	}
	defer release()
	return eng.Encode(ctx, req, progress)
}

// cloneOptions are the options of package clone for drama encode's flags.
func cloneOptions(opts *Options, id, out string) (clone.Options, error) {
	install, err := installFor(opts)
	if err != nil {
		return clone.Options{}, err
	}
	f := opts.F
	copts := clone.Options{ID: id, Name: opts.Name, Format: voices.Format(opts.Format), Output: out, Replace: opts.Replace,
		Install: install, Force: opts.Force, FFmpeg: opts.FFmpeg, Now: opts.Now,
		Progress: func(p clone.Progress) {
			if p.Done {
				f.Infof("encoded %d/%d %s", p.Index+1, p.Count, p.Ref.Name)
				return
			}
			f.Infof("encoding %d/%d %s (%.1f s)", p.Index+1, p.Count, p.Ref.Name, float64(p.Ref.Samples)/voices.SampleRate)
		}}
	return transcribeOptions(opts, copts), nil
}

// consentOf is the consent the flags give; a --consent-when in the future
// is refused.
func consentOf(opts *Options) (clone.Consent, error) {
	c := clone.Consent{Source: voices.SourceKind(opts.Source), Who: opts.Who, Statement: opts.Statement}
	if c.Source == voices.SourceSynthetic {
		if opts.Who != "" || opts.Statement != "" {
			opts.F.Warnf("--source synthetic: the consent flags are not saved (a synthetic voice is no person's)")
		}
		return clone.Consent{Source: c.Source}, nil
	}
	if opts.When != "" {
		t, _ := time.Parse(time.RFC3339, opts.When)
		if t.After(opts.Now().UTC().Truncate(time.Second)) {
			return c, cmdutil.FlagErrorf("--consent-when %s is in the future", opts.When)
		}
		c.When = t
	}
	return c, nil
}

// cloneError gives a clone's error its exit code and drama encode's
// advice: the encoder's failures are exit 4.
func cloneError(opts *Options, err error) error {
	var ee *clone.EncodeError
	var pe *clone.PiecesError
	var xe *clone.ExistsError
	switch {
	case errors.As(err, &ee):
		return cmdutil.EngineError(err)
	case errors.As(err, &pe):
		return fmt.Errorf("%w: run %s, type each piece's transcript into DIR/manifest.json, then %s",
			err, opts.F.Suggest("voice", "prepare", pe.Clip, "-o", "DIR"), encodeAgain(opts, "DIR"))
	case errors.As(err, &xe):
		return cmdutil.FlagErrorf("%s exists: choose another -o or --id, or give --replace to overwrite it", xe.Path)
	}
	return err
}

// reportConversion tells what --format had no place for and which
// references were joined to fit it.
func reportConversion(opts *Options, res *clone.Result) {
	if len(res.Dropped) > 0 {
		opts.F.Warnf("%s has no place for %s: keep a %s copy as the record of consent (drama encode --format %s)",
			opts.Format, strings.Join(res.Dropped, ", "), voices.FormatCloned, voices.FormatCloned)
	}
	for _, j := range res.Joins {
		opts.F.Infof("joined references %d to %d into one of %d frames to fit %s", j.First+1, j.Last+1, j.Frames, opts.Format)
	}
}
