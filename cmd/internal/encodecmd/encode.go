// Package encodecmd implements `drama encode`: prepared references and
// their transcripts in, codec codes from the engine, a cloned voice file
// with its consent statement out.
package encodecmd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/clone"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
	"github.com/drama-tts/drama/voices/transcribe"
)

// Options are the inputs of `drama encode`.
type Options struct {
	F         *cmdutil.Factory
	Name      string
	ID        string
	Manifest  string   // --manifest DIR
	Clips     []string // CLIP:TRANSCRIPT arguments
	Who       string
	When      string // RFC 3339; empty means now
	Statement string
	Source    string
	Format    string
	Output    string
	Server    string
	Plugin    string
	PluginDir string
	EngineBin string
	ModelDir  string
	Replace   bool
	Force     bool
	FFmpeg    string
	// TranscribeURL names a speech recognition server (POST
	// /v1/audio/transcriptions) for clips given without a transcript.
	TranscribeURL string

	transcriber *transcribe.Client

	// Now is the clock (tests replace it).
	Now func() time.Time
	// OpenEngine starts the engine that encodes; nil uses the plugin named
	// by --plugin. The returned function releases it.
	OpenEngine func(ctx context.Context, opts *Options) (engine.Engine, func(), error)
}

var formats = []string{string(voices.FormatCloned), string(voices.FormatCUDA), string(voices.FormatMetal)}
var sources = []string{string(voices.SourceConsented), string(voices.SourceSelf), string(voices.SourceSynthetic)}

// NewCmd returns `drama encode`. runF, if not nil, replaces the run
// (tests).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "encode --name NAME (--manifest DIR | CLIP:TRANSCRIPT...) --consent-who WHO --consent-statement TEXT",
		Short: "Encode recordings into a cloned voice file, with the speaker's consent",
		Long: strings.TrimSpace(`
Make a cloned voice: each reference is encoded into codec codes by the
engine's voice encoder (through the engine plugin, or a running drama serve
with --server), the codes are checked (ten codebooks, codes in range,
frames = ceil(samples / 2048)), and the voice is written with its consent
statement {who, when, statement}, mode 0600.

References come from a directory made by drama voice prepare (--manifest
DIR, with each reference's transcript typed into manifest.json), or from
CLIP:TRANSCRIPT arguments: each clip is prepared the same way and must stay
one reference (a clip cut into pieces needs drama voice prepare).
Transcripts are the exact words spoken: a clip given without one is
refused, unless --transcribe-url names an OpenAI-compatible speech
recognition server (whisper.cpp's server, faster-whisper servers, LocalAI),
which transcribes it; the words heard are printed, to check.

No consent, no clone: --consent-who and --consent-statement are required
unless --source synthetic. The model's licence forbids imitating an
identifiable person's voice without their consent.

With --server: ` + cmdutil.APIKeyHelp + `
The key needs scope voices.`),
		Example: strings.TrimSpace(`
$ drama encode --name Anna --manifest anna-prep --consent-who "Anna Example" --consent-statement "I, Anna Example, agree that my voice is cloned for the studio's audiobooks."
$ drama encode --name Me --source self --consent-who "Sam" --consent-statement "My own voice." take1.wav:"Hello, this is my voice."
$ drama encode --name Robot --source synthetic robot.wav:"Beep. I am not a person." --format drama3-voice/1 -o robot.json`),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Clips = args
			if err := validate(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Name, "name", "", "display name of the voice (required)")
	fl.StringVar(&opts.ID, "id", "", "voice id (default: from the name, e.g. \"Anna Example\" -> anna-example)")
	fl.StringVar(&opts.Manifest, "manifest", "", "directory prepared by drama voice prepare")
	fl.StringVar(&opts.Who, "consent-who", "", "who gave consent: the person whose voice it is")
	fl.StringVar(&opts.Statement, "consent-statement", "", "the consent statement, in the person's words")
	fl.StringVar(&opts.When, "consent-when", "", "when consent was given, RFC 3339 (default: now)")
	fl.StringVar(&opts.Source, "source", "consented", "whose voice: consented, self or synthetic")
	fl.StringVar(&opts.Format, "format", string(voices.FormatCloned), "voice file format: "+strings.Join(formats, ", "))
	fl.StringVarP(&opts.Output, "output", "o", "", "voice file to write (default <root>/voices/<id>.json)")
	fl.StringVar(&opts.Server, "server", "", "encode through a running drama serve at this URL instead of a plugin")
	fl.StringVar(&opts.Plugin, "plugin", "", "engine plugin that encodes (default: cuda, metal for --variant macos)")
	fl.StringVar(&opts.PluginDir, "plugin-dir", "", "directory searched first for engine plugins")
	fl.StringVar(&opts.EngineBin, "engine-bin", "", "native engine binary (default: found by the plugin)")
	fl.StringVar(&opts.ModelDir, "model-dir", "", "directory holding codec.pth (default <root>/<variant>)")
	fl.BoolVar(&opts.Replace, "replace", false, "overwrite an existing voice file")
	fl.BoolVar(&opts.Force, "force", false, "with CLIP:TRANSCRIPT, keep clips whose background is under 5 dB below the speech")
	fl.StringVar(&opts.TranscribeURL, "transcribe-url", "", "OpenAI-compatible speech recognition server (/v1/audio/transcriptions) that transcribes clips given without :TRANSCRIPT")
	fl.StringVar(&opts.FFmpeg, "ffmpeg", "", "ffmpeg binary for clips that are not WAV (default: ffmpeg on PATH)")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("source", cobra.FixedCompletions(sources, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func validate(o *Options) error {
	switch {
	case strings.TrimSpace(o.Name) == "":
		return cmdutil.FlagErrorf("--name is required")
	case o.Manifest == "" && len(o.Clips) == 0:
		return cmdutil.FlagErrorf("give the references: --manifest DIR, or CLIP:TRANSCRIPT arguments")
	case o.Manifest != "" && len(o.Clips) > 0:
		return cmdutil.FlagErrorf("give either --manifest DIR or CLIP:TRANSCRIPT arguments, not both")
	case !slices.Contains(sources, o.Source):
		return cmdutil.FlagErrorf("--source: want one of %s, got %q", strings.Join(sources, ", "), o.Source)
	case !slices.Contains(formats, o.Format):
		return cmdutil.FlagErrorf("--format: want one of %s, got %q", strings.Join(formats, ", "), o.Format)
	case o.Server != "" && (o.Output != "" || o.Format != string(voices.FormatCloned)):
		return cmdutil.FlagErrorf("--server saves the voice on the server: -o and --format do not apply")
	case o.Server != "" && o.When != "":
		return cmdutil.FlagErrorf("--server: the server stamps the consent with the time it saves the voice, so --consent-when does not apply: encode locally to keep an earlier consent time")
	}
	if o.Source != string(voices.SourceSynthetic) && (strings.TrimSpace(o.Who) == "" || strings.TrimSpace(o.Statement) == "") {
		return cmdutil.FlagErrorf("no consent, no clone: give --consent-who and --consent-statement (or --source synthetic for a voice that is no person's)")
	}
	if o.When != "" {
		if _, err := time.Parse(time.RFC3339, o.When); err != nil {
			return cmdutil.FlagErrorf("--consent-when: want an RFC 3339 time such as 2026-05-01T11:58:00Z, got %q", o.When)
		}
	}
	if o.TranscribeURL != "" {
		if _, err := transcribe.Endpoint(o.TranscribeURL); err != nil {
			return cmdutil.FlagErrorf("--transcribe-url: %v", err)
		}
		o.transcriber = &transcribe.Client{URL: o.TranscribeURL}
	}
	if o.ID != "" {
		if err := voices.CheckID(o.ID); err != nil {
			return cmdutil.FlagErrorf("--id: %v", err)
		}
	}
	return nil
}

// run loads the references, encodes them, checks the codes and writes the
// voice, through package clone.
func run(ctx context.Context, opts *Options) error {
	f := opts.F
	if opts.Server == "" && opts.ModelDir == "" && opts.OpenEngine == nil {
		if err := cmdutil.RequireInstalled(f, f.Global.Variant); err != nil {
			return fmt.Errorf("%w (or give --model-dir DIR holding codec.pth)", err)
		}
	}
	id, err := voiceID(opts)
	if err != nil {
		return err
	}
	if opts.Server != "" {
		refs, err := loadRefs(ctx, opts)
		if err != nil {
			return err
		}
		return cloneOnServer(ctx, opts, id, refs)
	}
	out, err := outputPath(opts, id)
	if err != nil {
		return err
	}
	consent, err := consentOf(opts)
	if err != nil {
		return err
	}
	enc := &pluginEncoder{opts: opts}
	var res *clone.Result
	if opts.Manifest != "" {
		refs, err := manifestRefs(opts.Manifest)
		if err != nil {
			return err
		}
		copts, err := cloneOptions(opts, id, out)
		if err != nil {
			return err
		}
		if res, err = clone.Make(ctx, enc, refs, consent, copts); err != nil {
			return cloneError(opts, err)
		}
	} else {
		clips, err := decodeClips(ctx, opts)
		if err != nil {
			return err
		}
		copts, err := cloneOptions(opts, id, out)
		if err != nil {
			return err
		}
		var warns []clip.Warning
		res, warns, err = clone.Clone(ctx, enc, clips, consent, copts)
		for _, w := range warns {
			f.Warnf("%s", w)
		}
		if err != nil {
			return cloneError(opts, err)
		}
	}
	reportConversion(opts, res)
	f.Infof("wrote %s (%s, %d references, mode 0600)", out, res.Voice.Format, len(res.Voice.References))
	return printResult(f, out, res.SHA256, res.Voice)
}
