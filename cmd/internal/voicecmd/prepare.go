// `drama voice prepare`: recordings in, trimmed, cut and levelled
// references and a manifest out.

package voicecmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/voices/clip"
)

// PrepareOptions are the inputs of `drama voice prepare`.
type PrepareOptions struct {
	F       *cmdutil.Factory
	Clips   []string
	OutDir  string
	Force   bool
	Replace bool
	FFmpeg  string
	// Detector holds the speech detection thresholds, bound to flags.
	Detector clip.Detector
}

// NewCmdPrepare returns `drama voice prepare`. runF, if not nil, replaces
// the run (tests).
func NewCmdPrepare(f *cmdutil.Factory, runF func(context.Context, *PrepareOptions) error) *cobra.Command {
	opts := &PrepareOptions{F: f, Detector: clip.DefaultDetector()}
	cmd := &cobra.Command{
		Use:   "prepare CLIP... -o DIR",
		Short: "Trim, cut and level recordings into references for a cloned voice",
		Long: strings.TrimSpace(`
Prepare recordings of one voice for encoding: each clip is read (WAV
directly, anything else through ffmpeg when it is installed), mixed to mono,
resampled to 44.1 kHz, trimmed to 0.25 s around its speech, cut inside
pauses into references of at most 30 s, and levelled to -20 dBFS speech with
peaks under -1 dBFS. The first 8 references and 60 s are kept.

DIR receives ref-01.wav, ref-02.wav, ... (mono 16-bit 44.1 kHz) and
manifest.json, which lists each reference, its span in its source and an
empty "text" slot: type each reference's exact transcript there, then run
drama encode --manifest DIR.

Refused (exit 1): a clip with no speech, under 10 s of speech in all, speech
under 5 dB over the background (unless --force). Warned: speech under 30 dB
over the background, a tonal background (music or hum), clipping, a clip
starting or ending inside a word, 30 s without a pause.`),
		Example: strings.TrimSpace(`
$ drama voice prepare take1.wav take2.flac -o anna-prep
$ drama voice prepare interview.wav -o prep --force
$ drama voice prepare take1.wav -o prep --replace --json`),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Clips = args
			if opts.OutDir == "" {
				return cmdutil.FlagErrorf("-o DIR is required: the directory for the references and manifest")
			}
			if d := opts.Detector; d.AboveFloor < 0 || d.BelowTop <= 0 {
				return cmdutil.FlagErrorf("--above-floor must be 0 or more and --below-top more than 0")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPrepare(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.OutDir, "output", "o", "", "directory for the references and manifest.json")
	fl.BoolVar(&opts.Force, "force", false, "keep clips whose background is under 5 dB below the speech")
	fl.BoolVar(&opts.Replace, "replace", false, "replace an existing manifest in DIR (transcripts of unchanged pieces are kept)")
	fl.StringVar(&opts.FFmpeg, "ffmpeg", "", "ffmpeg binary for clips that are not WAV (default: ffmpeg on PATH)")
	fl.Float64Var(&opts.Detector.AboveFloor, "above-floor", opts.Detector.AboveFloor, "speech: dB over the quiet floor (10th percentile frame level)")
	fl.Float64Var(&opts.Detector.BelowTop, "below-top", opts.Detector.BelowTop, "speech: dB under the loud top (95th percentile frame level)")
	fl.Float64Var(&opts.Detector.MinLevel, "min-level", opts.Detector.MinLevel, "speech: lowest frame level in dBFS")
	return cmd
}

func runPrepare(ctx context.Context, opts *PrepareOptions) error {
	f := opts.F
	clips, err := openAll(ctx, opts)
	defer func() {
		for _, c := range clips {
			c.File.Close()
		}
	}()
	if err != nil {
		return err
	}
	det := opts.Detector
	res, perr := clip.Prepare(clips, clip.Options{Detector: &det, Force: opts.Force})
	for _, w := range res.Warnings {
		f.Warnf("%s", w)
	}
	if perr != nil {
		return fmt.Errorf("nothing written to %s: %w", opts.OutDir, perr)
	}
	m, err := clip.WriteDir(opts.OutDir, res, opts.Replace)
	if errors.Is(err, clip.ErrManifestExists) {
		return cmdutil.FlagErrorf("%v: choose another -o DIR, or give --replace (transcripts already typed in are kept where the pieces match)", err)
	}
	if err != nil {
		return err
	}
	if err := printManifest(f, m); err != nil {
		return err
	}
	f.Infof("wrote %d references (%.1f s) and %s", len(m.References), totalSeconds(m), filepath.Join(opts.OutDir, clip.ManifestName))
	f.Infof("next: type each reference's exact transcript into its \"text\", then run: %s",
		f.Suggest("encode", "--manifest", opts.OutDir, "--name", "NAME", "--consent-who", "WHO", "--consent-statement", "STATEMENT"))
	return nil
}

// openAll opens every clip to be read in passes: memory stays bounded
// whatever their size. The clips opened are returned with an error, to be
// closed.
func openAll(ctx context.Context, opts *PrepareOptions) ([]clip.Clip, error) {
	dec := clip.Decoder{FFmpeg: opts.FFmpeg}
	var clips []clip.Clip
	for _, p := range opts.Clips {
		f, err := cmdutil.OpenClip(ctx, dec, p)
		if err != nil {
			return clips, err
		}
		clips = append(clips, clip.Clip{Name: p, File: f})
	}
	return clips, nil
}

func totalSeconds(m *clip.Manifest) float64 {
	n := 0
	for _, r := range m.References {
		n += r.Samples
	}
	return float64(n) / clip.SampleRate
}

func printManifest(f *cmdutil.Factory, m *clip.Manifest) error {
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, m)
	}
	t := cmdutil.NewTable(f.IO, "file", "source", "start", "end", "seconds", "frames", "speech dBFS", "peak dBFS")
	for _, r := range m.References {
		t.AddRow(r.File, r.Source, fmt.Sprintf("%.2f", r.Start), fmt.Sprintf("%.2f", r.End),
			fmt.Sprintf("%.2f", float64(r.Samples)/clip.SampleRate), fmt.Sprint(r.Frames),
			fmt.Sprintf("%.1f", r.SpeechDBFS), fmt.Sprintf("%.1f", r.PeakDBFS))
	}
	return t.Render()
}
