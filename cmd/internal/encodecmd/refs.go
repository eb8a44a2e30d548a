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
	"github.com/drama-tts/drama/engine/clone"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
)

// loadRefs loads the references that --server sends: a prepared
// directory's, or the clips prepared here.
func loadRefs(ctx context.Context, opts *Options) ([]clone.Reference, error) {
	if opts.Manifest != "" {
		return manifestRefs(opts.Manifest)
	}
	return clipRefs(ctx, opts)
}

// manifestRefs reads the references of a prepared directory; every one
// needs a transcript.
func manifestRefs(dir string) ([]clone.Reference, error) {
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
	refs := make([]clone.Reference, 0, len(m.References))
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

func readRef(dir string, r clip.ManifestRef) (clone.Reference, error) {
	p := filepath.Join(dir, r.File)
	b, err := os.ReadFile(p)
	if err != nil {
		return clone.Reference{}, err
	}
	a, err := clip.ReadWAV(bytes.NewReader(b))
	if err != nil {
		return clone.Reference{}, cmdutil.MismatchError(fmt.Errorf("%s: %w", p, err))
	}
	if a.Rate != clip.SampleRate || a.Channels != 1 || a.Coding != "pcm16" || a.Frames() != r.Samples {
		return clone.Reference{}, cmdutil.MismatchError(fmt.Errorf("%s: want mono pcm16 44100 Hz with %d samples as the manifest says, got %s %d Hz x%d with %d: prepare it again",
			p, r.Samples, a.Coding, a.Rate, a.Channels, a.Frames()))
	}
	return clone.Reference{Name: r.File, WAV: b, Samples: r.Samples, Text: r.Text}, nil
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

// clipRefs prepares CLIP:TRANSCRIPT arguments; each clip must stay one
// reference, as its transcript cannot be split.
func clipRefs(ctx context.Context, opts *Options) ([]clone.Reference, error) {
	clips, err := decodeClips(ctx, opts)
	if err != nil {
		return nil, err
	}
	refs, warns, err := clone.Prepare(ctx, clips, transcribeOptions(opts, clone.Options{Force: opts.Force}))
	for _, w := range warns {
		opts.F.Warnf("%s", w)
	}
	if err != nil {
		return nil, cloneError(opts, err)
	}
	return refs, nil
}

// decodeClips decodes CLIP:TRANSCRIPT arguments, each clip named by its
// path.
func decodeClips(ctx context.Context, opts *Options) ([]clone.Clip, error) {
	dec := clip.Decoder{FFmpeg: opts.FFmpeg}
	seen := map[string]bool{}
	var clips []clone.Clip
	for _, arg := range opts.Clips {
		path, text, ok := splitClip(arg)
		if !ok || strings.TrimSpace(text) == "" {
			if opts.transcriber == nil {
				return nil, cmdutil.FlagErrorf("%s: no transcript: give CLIP:TRANSCRIPT, the exact words spoken in the clip (or --transcribe-url, naming a speech recognition server)", path)
			}
			text = "" // package clone transcribes it (transcribeOptions)
		} else if err := voices.CheckTranscript(text, nil); err != nil {
			return nil, cmdutil.FlagErrorf("%s: transcript not allowed: %v", path, err)
		}
		if seen[path] {
			return nil, cmdutil.FlagErrorf("%s is given twice", path)
		}
		seen[path] = true
		a, err := cmdutil.DecodeClip(ctx, dec, path)
		if err != nil {
			return nil, err
		}
		clips = append(clips, clone.Clip{Name: path, Transcript: text, Audio: a, Path: path})
	}
	return clips, nil
}

// encodeAgain is the drama encode command line that reads the manifest in
// dir, with the user's own name, consent, source and format.
func encodeAgain(opts *Options, dir string) string {
	return opts.F.Suggest("encode", "--manifest", dir, "--name", opts.Name, "--consent-who", opts.Who,
		"--consent-statement", opts.Statement, "--consent-when", opts.When, "--source", opts.Source, "--format", opts.Format, "-o", opts.Output)
}

// transcribeOptions adds --transcribe-url's server to copts: the clips
// given without a transcript are transcribed, and the words heard shown.
func transcribeOptions(opts *Options, copts clone.Options) clone.Options {
	if opts.transcriber == nil {
		return copts
	}
	copts.Transcriber = opts.transcriber
	copts.Transcribed = func(path, text string) {
		opts.F.Infof("transcribed %s: %q (check the words; give %s:\"...\" to correct them)", path, text, path)
	}
	return copts
}
