package encodecmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
)

// ref is one reference ready to encode: canonical WAV bytes (mono 16-bit
// 44.1 kHz) and its transcript.
type ref struct {
	Name    string // the reference file or clip, for messages
	Data    []byte
	Samples int
	Text    string
}

func loadRefs(ctx context.Context, opts *Options) ([]ref, error) {
	if opts.Manifest != "" {
		return manifestRefs(opts.Manifest)
	}
	return clipRefs(ctx, opts)
}

// manifestRefs reads the references of a prepared directory; every one
// needs a transcript.
func manifestRefs(dir string) ([]ref, error) {
	m, err := clip.ReadManifest(dir)
	var me *clip.ManifestError
	switch {
	case errors.As(err, &me):
		return nil, cmdutil.MismatchError(err)
	case err != nil:
		return nil, err
	}
	if err := checkTexts(dir, m); err != nil {
		return nil, err
	}
	refs := make([]ref, 0, len(m.References))
	for _, r := range m.References {
		rf, err := readRef(dir, r)
		if err != nil {
			return nil, err
		}
		refs = append(refs, rf)
	}
	return refs, nil
}

func checkTexts(dir string, m *clip.Manifest) error {
	var missing, bad []string
	for _, r := range m.References {
		if r.Text == "" {
			missing = append(missing, fmt.Sprintf("%s (%s)", r.File, r.Span()))
		} else if err := voices.CheckTranscript(r.Text, nil); err != nil {
			bad = append(bad, fmt.Sprintf("%s (%s): %v", r.File, r.Span(), err))
		}
	}
	path := filepath.Join(dir, clip.ManifestName)
	if len(missing) > 0 {
		return fmt.Errorf("%d references have no transcript: %s: type the exact words of each into its \"text\" in %s",
			len(missing), strings.Join(missing, ", "), path)
	}
	if len(bad) > 0 {
		return fmt.Errorf("transcripts not allowed in %s: %s", path, strings.Join(bad, "; "))
	}
	return nil
}

func readRef(dir string, r clip.ManifestRef) (ref, error) {
	p := filepath.Join(dir, r.File)
	b, err := os.ReadFile(p)
	if err != nil {
		return ref{}, err
	}
	a, err := clip.ReadWAV(bytes.NewReader(b))
	if err != nil {
		return ref{}, cmdutil.MismatchError(fmt.Errorf("%s: %w", p, err))
	}
	if a.Rate != clip.SampleRate || a.Channels != 1 || a.Coding != "pcm16" || a.Frames() != r.Samples {
		return ref{}, cmdutil.MismatchError(fmt.Errorf("%s: want mono pcm16 44100 Hz with %d samples as the manifest says, got %s %d Hz x%d with %d: prepare it again",
			p, r.Samples, a.Coding, a.Rate, a.Channels, a.Frames()))
	}
	return ref{Name: r.File, Data: b, Samples: r.Samples, Text: r.Text}, nil
}

// splitClip splits CLIP:TRANSCRIPT at the first colon after which the
// path names an existing file, else at the first colon.
func splitClip(arg string) (path, text string, ok bool) {
	first := -1
	for i := 0; i < len(arg); i++ {
		if arg[i] != ':' {
			continue
		}
		if first < 0 {
			first = i
		}
		if fi, err := os.Stat(arg[:i]); err == nil && !fi.IsDir() {
			return arg[:i], arg[i+1:], true
		}
	}
	if first < 0 {
		return arg, "", false
	}
	return arg[:first], arg[first+1:], true
}

// clipRefs prepares CLIP:TRANSCRIPT arguments.
func clipRefs(ctx context.Context, opts *Options) ([]ref, error) {
	clips, texts, err := decodeClips(ctx, opts)
	if err != nil {
		return nil, err
	}
	return prepareRefs(opts, clips, texts)
}

// prepareRefs prepares clips whose transcripts are texts (by clip name);
// each clip must stay one reference, as its transcript cannot be split.
func prepareRefs(opts *Options, clips []clip.Clip, texts map[string]string) ([]ref, error) {
	res, err := clip.Prepare(clips, clip.Options{Force: opts.Force})
	for _, w := range res.Warnings {
		opts.F.Warnf("%s", w)
	}
	if err != nil {
		return nil, err
	}
	if err := checkOnePiece(opts, res); err != nil {
		return nil, err
	}
	refs := make([]ref, 0, len(res.References))
	for _, r := range res.References {
		refs = append(refs, ref{Name: r.Source, Data: clip.EncodeWAV(r.Samples, clip.SampleRate), Samples: len(r.Samples), Text: texts[r.Source]})
	}
	return refs, nil
}

func decodeClips(ctx context.Context, opts *Options) ([]clip.Clip, map[string]string, error) {
	dec := clip.Decoder{FFmpeg: opts.FFmpeg}
	texts := map[string]string{}
	var clips []clip.Clip
	for _, arg := range opts.Clips {
		path, text, ok := splitClip(arg)
		if !ok || strings.TrimSpace(text) == "" {
			if opts.transcriber == nil {
				return nil, nil, cmdutil.FlagErrorf("%s: no transcript: give CLIP:TRANSCRIPT, the exact words spoken in the clip (or --transcribe-url, naming a speech recognition server)", path)
			}
			heard, err := opts.transcriber.File(ctx, path, "")
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			opts.F.Infof("transcribed %s: %q (check the words; give %s:\"...\" to correct them)", path, heard, path)
			text = heard
		}
		if err := voices.CheckTranscript(text, nil); err != nil {
			return nil, nil, cmdutil.FlagErrorf("%s: transcript not allowed: %v", path, err)
		}
		if _, dup := texts[path]; dup {
			return nil, nil, cmdutil.FlagErrorf("%s is given twice", path)
		}
		texts[path] = text
		a, err := dec.Decode(ctx, path)
		var fe *clip.FormatError
		switch {
		case errors.As(err, &fe):
			return nil, nil, cmdutil.MismatchError(err)
		case err != nil:
			return nil, nil, err
		}
		clips = append(clips, clip.Clip{Name: path, Audio: a})
	}
	return clips, texts, nil
}

func checkOnePiece(opts *Options, res *clip.Result) error {
	for _, c := range res.Clips {
		if c.Pieces <= 1 {
			continue
		}
		var spans []string
		for _, r := range res.References {
			if r.Source == c.Source {
				spans = append(spans, fmt.Sprintf("%.2f-%.2f s", float64(r.Start)/clip.SampleRate, float64(r.End)/clip.SampleRate))
			}
		}
		return fmt.Errorf("%s is cut into %d references (%s), and one transcript cannot be split: run %s, type each piece's transcript into DIR/manifest.json, then %s",
			c.Source, c.Pieces, strings.Join(spans, ", "), opts.F.Suggest("voice", "prepare", c.Source, "-o", "DIR"), encodeAgain(opts, "DIR"))
	}
	return nil
}

// encodeAgain is the drama encode command line that reads the manifest in
// dir, with the user's own name, consent, source and format.
func encodeAgain(opts *Options, dir string) string {
	return opts.F.Suggest("encode", "--manifest", dir, "--name", opts.Name, "--consent-who", opts.Who,
		"--consent-statement", opts.Statement, "--consent-when", opts.When, "--source", opts.Source, "--format", opts.Format, "-o", opts.Output)
}
