package cmdutil

import (
	"context"
	"errors"

	"github.com/drama-tts/drama/voices/clip"
)

// DecodeClip decodes the audio file at path with dec; a file that is not
// audio dec reads is a mismatch (exit 3), as for drama voice prepare and
// drama encode alike.
func DecodeClip(ctx context.Context, dec clip.Decoder, path string) (*clip.Audio, error) {
	a, err := dec.Decode(ctx, path)
	if fe := (*clip.FormatError)(nil); errors.As(err, &fe) {
		return nil, MismatchError(err)
	}
	return a, err
}

// OpenClip opens the audio file at path with dec to be read in passes
// (clip.Decoder.Open), with DecodeClip's exit status for a file that is
// not audio dec reads. Close the File when done.
func OpenClip(ctx context.Context, dec clip.Decoder, path string) (*clip.File, error) {
	f, err := dec.Open(ctx, path)
	if fe := (*clip.FormatError)(nil); errors.As(err, &fe) {
		return nil, MismatchError(err)
	}
	return f, err
}
