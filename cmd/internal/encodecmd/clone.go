package encodecmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
	"github.com/drama-tts/drama/voices/transcribe"
)

// Clone is the clone pipeline behind drama serve's POST /v1/voices, the
// same as drama encode with CLIP:TRANSCRIPT arguments: each clip is
// prepared and must stay one reference, the references are encoded through
// eng with install, the codes are checked, and the voice is written to
// dir/<id>.json (localrouter-voice-codes/1, mode 0600), consent stamped
// now. An existing voice is not replaced. Errors that are the request's
// fault are engine.KindInvalid; a failing engine or bad codes are
// engine.KindFailed.
func Clone(ctx context.Context, eng engine.Engine, install engine.Install, dir string, req httpapi.CloneRequest) (*voices.Voice, error) {
	return CloneWith(ctx, eng, install, dir, req, nil)
}

// CloneWith is Clone with a transcription server: a clip sent without a
// transcript is transcribed there first (tr nil: it is refused).
func CloneWith(ctx context.Context, eng engine.Engine, install engine.Install, dir string, req httpapi.CloneRequest, tr *transcribe.Client) (*voices.Voice, error) {
	opts := &Options{F: quietFactory(), ID: req.ID, Name: req.Name, Source: req.Source, Who: req.ConsentWho,
		Statement: req.ConsentStatement, Format: string(voices.FormatCloned), Now: time.Now}
	if opts.Source == "" {
		opts.Source = string(voices.SourceConsented)
	}
	opts.transcriber = tr
	v, err := cloneVoice(ctx, opts, eng, install, dir, req.Clips)
	return v, asEngineError(err)
}

func cloneVoice(ctx context.Context, opts *Options, eng engine.Engine, install engine.Install, dir string, in []httpapi.CloneClip) (*voices.Voice, error) {
	if err := validateClone(opts, in); err != nil {
		return nil, err
	}
	id, err := voiceID(opts)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, id+".json")
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("voice %q exists: delete it first (DELETE /v1/voices/%s), or give another id", id, id)
	}
	clips, texts, err := requestClips(ctx, in, opts.transcriber)
	if err != nil {
		return nil, err
	}
	refs, err := prepareRefs(opts, clips, texts)
	if err != nil {
		return nil, err
	}
	codes, err := encodeWith(ctx, eng, install, refs, opts.F)
	if err != nil {
		return nil, err
	}
	v, err := buildVoice(opts, id, refs, codes)
	if err != nil {
		return nil, err
	}
	_, err = writeVoice(out, v)
	return v, err
}

// validateClone applies drama encode's flag rules to a request.
func validateClone(opts *Options, in []httpapi.CloneClip) error {
	if len(in) == 0 {
		return fmt.Errorf("no clips: send one or more clips, each with its transcript")
	}
	for i, c := range in {
		opts.Clips = append(opts.Clips, clipName(i, c)+":"+c.Transcript)
	}
	return validate(opts)
}

// clipName names the i-th clip of a request in messages: "clip 2
// (take2.wav)", or "clip 2" when it came without a file name.
func clipName(i int, c httpapi.CloneClip) string {
	if c.Filename == "" {
		return fmt.Sprintf("clip %d", i+1)
	}
	return fmt.Sprintf("clip %d (%s)", i+1, filepath.Base(c.Filename))
}

// maxClipDuration is the longest clip decoded: what a voice keeps in all
// (clip.MaxTotal samples, 60 s). A longer clip is refused from its header
// (WAV) or after decoding a moment past it (ffmpeg), never decoded whole.
const maxClipDuration = time.Duration(clip.MaxTotal) * time.Second / clip.SampleRate

// requestClips decodes the clips of a request, from their files (Path) or
// bytes (Data): WAV directly, anything else through ffmpeg. Clips are named
// by clipName, unique by their number.
func requestClips(ctx context.Context, in []httpapi.CloneClip, tr *transcribe.Client) ([]clip.Clip, map[string]string, error) {
	texts := map[string]string{}
	var clips []clip.Clip
	for i, c := range in {
		name := clipName(i, c)
		if strings.TrimSpace(c.Transcript) == "" {
			text, err := transcribeClip(ctx, tr, c)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			c.Transcript = text
		}
		if err := voices.CheckTranscript(c.Transcript, nil); err != nil {
			return nil, nil, fmt.Errorf("%s: transcript not allowed: %w", name, err)
		}
		a, err := decodeClip(ctx, c)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		texts[name] = c.Transcript
		clips = append(clips, clip.Clip{Name: name, Audio: a})
	}
	return clips, texts, nil
}

// transcribeClip asks the transcription server for the words of a clip sent
// without its transcript.
func transcribeClip(ctx context.Context, tr *transcribe.Client, c httpapi.CloneClip) (string, error) {
	if tr == nil {
		return "", errors.New("no transcript: send the exact words spoken in the clip as its transcript field (or start drama serve with --transcribe-url, naming a speech recognition server)")
	}
	if c.Path != "" {
		return tr.File(ctx, c.Path, c.Filename)
	}
	return tr.Transcribe(ctx, c.Filename, bytes.NewReader(c.Data))
}

func decodeClip(ctx context.Context, c httpapi.CloneClip) (*clip.Audio, error) {
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
	a, err := clip.Decoder{MaxDuration: maxClipDuration}.Decode(ctx, path)
	return a, hidePath(err, path)
}

// hidePath takes the server's file name out of a decoding error: the
// client knows its clip by number and file name, which the caller adds.
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

// asEngineError maps a drama encode error to the engine's error kinds.
func asEngineError(err error) error {
	var ee *engine.Error
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case cmdutil.ExitCode(err) == cmdutil.ExitEngine && errors.As(err, &ee):
		return err
	case cmdutil.ExitCode(err) == cmdutil.ExitEngine:
		return engine.Errorf(engine.KindFailed, "%v", err)
	}
	return engine.Invalidf("%v", err)
}

// quietFactory is a Factory that prints nothing.
func quietFactory() *cmdutil.Factory {
	ios := &cmdutil.IOStreams{In: bytes.NewReader(nil), Out: io.Discard, ErrOut: io.Discard}
	return &cmdutil.Factory{IO: ios, Global: &cmdutil.Global{Quiet: true}, Getenv: func(string) string { return "" }}
}
