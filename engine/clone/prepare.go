package clone

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
)

// Prepare prepares clips into references, one a clip: a clip without a
// transcript is transcribed (Options.Transcriber), each transcript is
// checked, each clip decoded when it comes undecoded, and clip.Prepare
// trims and levels them. A clip cut into several pieces is a
// *PiecesError, as its transcript cannot be split. The warnings come back
// even with an error.
func Prepare(ctx context.Context, clips []Clip, opts Options) ([]Reference, []clip.Warning, error) {
	if len(clips) == 0 {
		return nil, nil, inputf("", "no clips: give one or more clips, each with its transcript")
	}
	texts := map[string]string{}
	in := make([]clip.Clip, 0, len(clips))
	for _, c := range clips {
		if _, dup := texts[c.Name]; dup {
			return nil, nil, inputf(c.Name, "given twice")
		}
		text, err := transcript(ctx, c, opts)
		if err != nil {
			return nil, nil, err
		}
		c.Transcript = text
		if err := voices.CheckTranscript(c.Transcript, nil); err != nil {
			return nil, nil, &InputError{Clip: c.Name, Err: fmt.Errorf("transcript not allowed: %w", err)}
		}
		a := c.Audio
		if a == nil {
			if a, err = decode(ctx, c, opts); err != nil {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				return nil, nil, &InputError{Clip: c.Name, Err: err}
			}
		}
		texts[c.Name] = c.Transcript
		in = append(in, clip.Clip{Name: c.Name, Audio: a})
	}
	res, err := clip.Prepare(in, clip.Options{Force: opts.Force})
	var warns []clip.Warning
	if res != nil {
		warns = res.Warnings
	}
	if err != nil {
		return nil, warns, &InputError{Err: err}
	}
	if err := onePiece(res); err != nil {
		return nil, warns, err
	}
	refs := make([]Reference, 0, len(res.References))
	for _, r := range res.References {
		refs = append(refs, Reference{Name: r.Source, WAV: clip.EncodeWAV(r.Samples, clip.SampleRate), Samples: len(r.Samples), Text: texts[r.Source]})
	}
	return refs, warns, nil
}

func onePiece(res *clip.Result) error {
	for _, c := range res.Clips {
		if c.Pieces <= 1 {
			continue
		}
		e := &PiecesError{Clip: c.Source, Pieces: c.Pieces}
		for _, r := range res.References {
			if r.Source == c.Source {
				e.Spans = append(e.Spans, fmt.Sprintf("%.2f-%.2f s", float64(r.Start)/clip.SampleRate, float64(r.End)/clip.SampleRate))
			}
		}
		return e
	}
	return nil
}

// decode decodes a clip from its file, or from its bytes through a
// temporary file. The file's name stays out of the error: the clip is
// known by its Name, which the caller adds.
func decode(ctx context.Context, c Clip, opts Options) (*clip.Audio, error) {
	path := c.Path
	if path == "" {
		f, err := os.CreateTemp("", "drama-clip-*")
		if err != nil {
			return nil, err
		}
		defer os.Remove(f.Name())
		_, werr := f.Write(c.Data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, werr
		}
		path = f.Name()
	}
	a, err := clip.Decoder{FFmpeg: opts.FFmpeg, MaxDuration: opts.MaxClipDuration}.Decode(ctx, path)
	return a, hidePath(err, path)
}

// hidePath takes a file's name out of a decoding error.
func hidePath(err error, path string) error {
	var fe *clip.FormatError
	switch {
	case err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &fe) && fe.Name == path:
		fe.Name = ""
		return err
	}
	return errors.New(strings.ReplaceAll(strings.ReplaceAll(err.Error(), path+": ", ""), path, "the clip"))
}
