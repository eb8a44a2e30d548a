package clone

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
)

// Transcriber hears the words spoken in a clip: a speech recognition
// server's client (*transcribe.Client of package voices/transcribe is
// one). File transcribes the file at path, Transcribe a clip's bytes;
// name is the clip's file name to send, empty when it has none.
type Transcriber interface {
	File(ctx context.Context, path, name string) (string, error)
	Transcribe(ctx context.Context, name string, audio io.Reader) (string, error)
}

// ErrNoTranscript is a clip without a transcript and no Transcriber to
// hear it; it comes wrapped in an *InputError naming the clip.
var ErrNoTranscript = errors.New("no transcript")

// TranscribeError is a clip the Transcriber could not transcribe: the
// server failed, or heard no words.
type TranscribeError struct {
	Clip string
	Err  error
}

func (e *TranscribeError) Error() string { return e.Clip + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *TranscribeError) Unwrap() error { return e.Err }

// transcript returns c's transcript, or the words opts.Transcriber hears
// in a clip sent without one (told to opts.Transcribed).
func transcript(ctx context.Context, c Clip, opts Options) (string, error) {
	if strings.TrimSpace(c.Transcript) != "" {
		return c.Transcript, nil
	}
	if opts.Transcriber == nil {
		return "", &InputError{Clip: c.Name, Err: ErrNoTranscript}
	}
	var text string
	var err error
	switch {
	case c.Path != "":
		text, err = opts.Transcriber.File(ctx, c.Path, c.Filename)
	case c.Data != nil:
		text, err = opts.Transcriber.Transcribe(ctx, c.Filename, bytes.NewReader(c.Data))
	default:
		return "", &InputError{Clip: c.Name, Err: ErrNoTranscript}
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &TranscribeError{Clip: c.Name, Err: err}
	}
	if opts.Transcribed != nil {
		opts.Transcribed(c.Name, text)
	}
	return text, nil
}
