// Package clone makes a cloned voice: recordings with the exact words
// spoken in them are prepared into references (clip.Prepare: trimmed,
// levelled, each clip one reference), encoded into codec codes by an
// engine's voice encoder, the codes checked, and the voice built with its
// consent and written canonically, atomically, mode 0600. drama encode and
// drama serve's POST /v1/voices both clone through it. Its errors are typed
// (*InputError, *PiecesError, *ExistsError, *TranscribeError,
// *EncodeError; docs/cloning.md, "Library"); the commands add the advice.
package clone

import (
	"context"
	"errors"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
)

// Encoder encodes clips into codec codes; every engine.Engine is one.
type Encoder interface {
	Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error)
}

// Clip is one recording and the exact words spoken in it. Audio is the
// decoded recording; when it is nil the file at Path, or else Data, is
// decoded (WAV directly, anything else through ffmpeg). A clip without a
// Transcript is transcribed by Options.Transcriber from Path or Data,
// sent under Filename.
type Clip struct {
	Name       string // how messages name the clip; unique among a clone's clips
	Transcript string
	Audio      *clip.Audio
	Path       string
	Data       []byte
	Filename   string // the clip's own file name, if any (default: Path's base name)
}

// Reference is one prepared reference: canonical WAV bytes (mono 16-bit
// 44.1 kHz), its sample count and its transcript.
type Reference struct {
	Name    string // the clip or reference file, for messages
	WAV     []byte
	Samples int
	Text    string
}

// Consent is whose voice it is and what they agreed to. A synthetic voice
// (Source synthetic) is no person's and keeps none.
type Consent struct {
	Source    voices.SourceKind // consented, self or synthetic
	Who       string
	Statement string
	When      time.Time // zero: the time the voice is made
}

// Options configure a clone.
type Options struct {
	ID   string // the voice id; empty: made from Name (IDFromName)
	Name string // the voice's display name (required)
	// Format is the voice file's format (default localrouter-voice-codes/1).
	Format voices.Format
	// Output is the voice file written (required by Clone and Make).
	Output string
	// Replace overwrites an existing Output; without it the clone is
	// refused (an *ExistsError) before anything is decoded or encoded.
	Replace bool
	// Install names the files the engine encodes with.
	Install engine.Install
	// Force keeps clips whose background is under 5 dB below the speech.
	Force bool
	// FFmpeg is the ffmpeg binary for clips that are not WAV (default:
	// ffmpeg on PATH). MaxClipDuration, when set, refuses a longer clip
	// from its header (WAV) or a moment past it (ffmpeg), undecoded.
	FFmpeg          string
	MaxClipDuration time.Duration
	// Transcriber, when set, transcribes the clips that come without a
	// transcript; without it such a clip is refused (an *InputError
	// wrapping ErrNoTranscript). A failed transcription is a
	// *TranscribeError. Transcribed, when set, is told the words heard.
	Transcriber Transcriber
	Transcribed func(clip, text string)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Progress, when set, is told as each reference's encoding begins and
	// ends.
	Progress func(Progress)
}

// Progress is one step of encoding.
type Progress struct {
	Index, Count int
	Ref          Reference
	Done         bool // the reference is encoded
}

// Result is a cloned voice and where it was written.
type Result struct {
	Voice  *voices.Voice
	File   string
	SHA256 string // of the file
	// Dropped names what the format has no place for (the consent, for
	// the CUDA and Metal formats); Joins the references joined to fit it.
	Dropped []string
	Joins   []voices.Join
}

// InputError is a clone refused for its input: the consent, the name or
// id, a clip, its transcript or its audio. Clip names the clip, if any.
type InputError struct {
	Clip string
	Err  error
}

func (e *InputError) Error() string {
	if e.Clip == "" {
		return e.Err.Error()
	}
	return e.Clip + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

func inputf(clipName, format string, args ...any) error {
	return &InputError{Clip: clipName, Err: fmt.Errorf(format, args...)}
}

// ExistsError is a clone whose voice file exists, with Replace unset:
// before the clone began, or made by another clone while this one encoded
// (which then keeps its file).
type ExistsError struct {
	ID, Path string
}

func (e *ExistsError) Error() string { return fmt.Sprintf("voice %q exists", e.ID) }

// PiecesError is a clip that preparation cut into several references,
// which one transcript cannot cover.
type PiecesError struct {
	Clip   string
	Pieces int
	Spans  []string // "0.75-20.27 s", one a piece
}

func (e *PiecesError) Error() string {
	return fmt.Sprintf("%s is cut into %d references (%s), and one transcript cannot be split", e.Clip, e.Pieces, strings.Join(e.Spans, ", "))
}

// EncodeError is the encoder's failure, or codes from it that do not
// check. Ref names the reference, when one is at fault.
type EncodeError struct {
	Ref string
	Err error
}

func (e *EncodeError) Error() string {
	if e.Ref == "" {
		return "encode: " + e.Err.Error()
	}
	return "encode " + e.Ref + ": " + e.Err.Error()
}

// Unwrap returns the cause (an *engine.Error when the engine failed).
func (e *EncodeError) Unwrap() error { return e.Err }

var sources = []voices.SourceKind{voices.SourceConsented, voices.SourceSelf, voices.SourceSynthetic}

// Check refuses consent and options no clone may have: no name, an id the
// voice formats refuse, an unknown source or format, and no consent for a
// voice that is a person's.
func Check(c Consent, opts Options) error {
	switch {
	case strings.TrimSpace(opts.Name) == "":
		return inputf("", "a voice needs a name")
	case !slices.Contains(sources, c.Source):
		return inputf("", "source: want one of consented, self, synthetic, got %q", c.Source)
	case opts.Format != "" && opts.Format != voices.FormatCloned && opts.Format != voices.FormatCUDA && opts.Format != voices.FormatMetal:
		return inputf("", "format: want %s, %s or %s, got %q", voices.FormatCloned, voices.FormatCUDA, voices.FormatMetal, opts.Format)
	case c.Source != voices.SourceSynthetic && (strings.TrimSpace(c.Who) == "" || strings.TrimSpace(c.Statement) == ""):
		return inputf("", "no consent, no clone: a person's voice needs who gave consent and their statement (or source synthetic for a voice that is no person's)")
	}
	if opts.ID != "" {
		if err := voices.CheckID(opts.ID); err != nil {
			return &InputError{Err: err}
		}
	}
	return nil
}

// IDFromName makes a voice id of a display name: lower-case letters,
// digits and _, runs of anything else one -, at most 64 bytes.
func IDFromName(name string) (string, error) {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.TrimRight(b.String(), "-")
	if len(id) > 64 {
		id = strings.TrimRight(id[:64], "-")
	}
	if err := voices.CheckID(id); err != nil {
		return "", inputf("", "cannot make a voice id from the name %q: give an id (lower-case letters, digits, - and _)", name)
	}
	return id, nil
}

func (o Options) id() (string, error) {
	if o.ID != "" {
		return o.ID, nil
	}
	return IDFromName(o.Name)
}

// checkOutput refuses an existing Output unless Replace.
func checkOutput(id string, opts Options) error {
	if opts.Output == "" {
		return errors.New("clone: no output file")
	}
	_, err := os.Stat(opts.Output)
	switch {
	case err == nil && !opts.Replace:
		return &ExistsError{ID: id, Path: opts.Output}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return nil
}

// Clone makes a voice of clips: it checks the consent and options, refuses
// an existing Output unless Replace, prepares the clips (each must stay
// one reference), encodes them through enc, checks the codes, builds the
// voice and writes it to Output, mode 0600. The warnings of preparation
// come back even with an error.
func Clone(ctx context.Context, enc Encoder, clips []Clip, c Consent, opts Options) (*Result, []clip.Warning, error) {
	if err := Check(c, opts); err != nil {
		return nil, nil, err
	}
	id, err := opts.id()
	if err != nil {
		return nil, nil, err
	}
	if err := checkOutput(id, opts); err != nil {
		return nil, nil, err
	}
	refs, warns, err := Prepare(ctx, clips, opts)
	if err != nil {
		return nil, warns, err
	}
	res, err := Make(ctx, enc, refs, c, opts)
	return res, warns, err
}

// MakeReferences makes references of clips without making a voice: it
// checks the consent and options as Clone does (opts.Name labels the
// references in messages; no file is written), prepares the clips (each
// must stay one reference) and encodes them through enc, the codes
// checked. The references come in the order of clips.
func MakeReferences(ctx context.Context, enc Encoder, clips []Clip, c Consent, opts Options) ([]voices.Reference, []clip.Warning, error) {
	if err := Check(c, opts); err != nil {
		return nil, nil, err
	}
	refs, warns, err := Prepare(ctx, clips, opts)
	if err != nil {
		return nil, warns, err
	}
	byName := map[string]Reference{}
	for _, r := range refs {
		byName[r.Name] = r
	}
	ordered := make([]Reference, 0, len(clips))
	for _, c := range clips {
		r, ok := byName[c.Name]
		if !ok {
			return nil, warns, inputf(c.Name, "no reference was made of it")
		}
		ordered = append(ordered, r)
	}
	codes, err := encode(ctx, enc, ordered, opts)
	if err != nil {
		return nil, warns, err
	}
	out := make([]voices.Reference, len(ordered))
	for i, r := range ordered {
		out[i] = voices.Reference{Text: r.Text, Samples: r.Samples, Codes: codes[i]}
	}
	return out, warns, nil
}

// Make makes a voice of prepared references: it encodes them through enc,
// checks the codes, builds the voice and writes it to Output, mode 0600.
func Make(ctx context.Context, enc Encoder, refs []Reference, c Consent, opts Options) (*Result, error) {
	if err := Check(c, opts); err != nil {
		return nil, err
	}
	id, err := opts.id()
	if err != nil {
		return nil, err
	}
	if err := checkOutput(id, opts); err != nil {
		return nil, err
	}
	codes, err := encode(ctx, enc, refs, opts)
	if err != nil {
		return nil, err
	}
	res, err := build(id, refs, codes, c, opts)
	if err != nil {
		return nil, err
	}
	res.File = opts.Output
	res.SHA256, err = write(opts.Output, res.Voice, opts.Replace)
	if errors.Is(err, fs.ErrExist) {
		// made meanwhile, by another clone of the same id sharing the
		// directory: it stays, this one is refused
		return nil, &ExistsError{ID: id, Path: opts.Output}
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// build makes the voice of references and their codes, with its consent,
// in opts.Format. The voice is checked once: by voices.Convert, or for the
// cloned format by voices.Marshal in write.
func build(id string, refs []Reference, codes []voices.Codes, c Consent, opts Options) (*Result, error) {
	clock := opts.Now
	if clock == nil {
		clock = time.Now
	}
	now := clock().UTC().Truncate(time.Second)
	v := &voices.Voice{Format: voices.FormatCloned, ID: id, Name: strings.TrimSpace(opts.Name), Created: now, Source: c.Source}
	if c.Source != voices.SourceSynthetic {
		when := now
		if !c.When.IsZero() {
			when = c.When.UTC()
		}
		if when.After(now) {
			return nil, inputf("", "the consent time %s is in the future", when.Format(time.RFC3339))
		}
		v.Consent = &voices.Consent{Who: strings.TrimSpace(c.Who), When: when, Statement: strings.TrimSpace(c.Statement)}
	}
	for i, r := range refs {
		v.References = append(v.References, voices.Reference{Text: r.Text, Samples: r.Samples, Codes: codes[i]})
	}
	if opts.Format == "" || opts.Format == voices.FormatCloned {
		return &Result{Voice: v}, nil
	}
	conv, err := voices.Convert(v, opts.Format, voices.ConvertOptions{})
	if err != nil {
		return nil, err
	}
	return &Result{Voice: conv.Voice, Dropped: conv.Dropped, Joins: conv.Joins}, nil
}

// write writes v canonically, atomically, mode 0600, and returns the
// file's sha256. Without replace an existing file is kept (an error
// wrapping fs.ErrExist), even one made after checkOutput looked: the
// encode takes seconds, and another clone of the id may finish first.
func write(path string, v *voices.Voice, replace bool) (string, error) {
	data, err := voices.Marshal(v, nil)
	if err != nil {
		return "", err
	}
	put := atomicfile.CreateFile
	if replace {
		put = atomicfile.WriteFile
	}
	if err := put(path, data, 0o600); err != nil {
		return "", err
	}
	return voices.FileSHA256(data), nil
}
