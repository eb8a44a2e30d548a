package clone

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/clone/clonetest"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
)

const (
	speechWAV = "../../voices/clip/testdata/speech.wav"
	statement = "I, Anna Example, agree that my voice is cloned for this test."
	sentence  = "The quick brown fox jumps over the lazy dog."
)

var clock = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

var (
	shortOnce sync.Once
	shortWAV  []byte
)

// short is the first 16 s of the speech fixture at 44.1 kHz as WAV bytes.
func short(t *testing.T) []byte {
	t.Helper()
	shortOnce.Do(func() {
		a, err := (clip.Decoder{}).Decode(context.Background(), speechWAV)
		if err != nil {
			return
		}
		shortWAV = clip.EncodeWAV(clip.Resample(a.Data[:16*a.Rate], a.Rate, clip.SampleRate), clip.SampleRate)
	})
	if shortWAV == nil {
		t.Fatal("could not make the short clip")
	}
	return shortWAV
}

func anna(t *testing.T) ([]Clip, Consent, Options) {
	out := filepath.Join(t.TempDir(), "anna-example.json")
	return []Clip{{Name: "clip 1 (take1.wav)", Transcript: sentence, Data: short(t)}},
		Consent{Source: voices.SourceConsented, Who: "Anna Example", Statement: statement},
		Options{Name: "Anna Example", Output: out, Install: engine.Install{ModelDir: "/models/full"}, Now: func() time.Time { return clock }}
}

func TestClone(t *testing.T) {
	clips, consent, opts := anna(t)
	enc := &clonetest.Encoder{}
	var steps []Progress
	opts.Progress = func(p Progress) { steps = append(steps, p) }
	res, _, err := Clone(context.Background(), enc, clips, consent, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := voices.ReadFile(opts.Output, nil)
	if err != nil || got.ID != "anna-example" || got.ID != res.Voice.ID || got.Consent == nil || got.Consent.Statement != statement ||
		!got.Consent.When.Equal(clock) || len(got.References) != 1 || got.References[0].Text != sentence {
		t.Fatalf("%v %+v", err, got)
	}
	if fi, _ := os.Stat(opts.Output); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode())
	}
	if b, _ := os.ReadFile(opts.Output); voices.FileSHA256(b) != res.SHA256 || res.File != opts.Output {
		t.Fatalf("result %+v does not name the file written", res)
	}
	if enc.Req.Install.ModelDir != "/models/full" || enc.Req.Clips[0].ID != "ref-01" {
		t.Fatalf("request: %+v", enc.Req.Install)
	}
	if len(steps) != 1 || !steps[0].Done || steps[0].Ref.Name != "clip 1 (take1.wav)" {
		t.Fatalf("progress %+v", steps)
	}
	// the same id again: refused before anything is encoded
	_, _, err = Clone(context.Background(), enc, clips, consent, opts)
	var xe *ExistsError
	if !errors.As(err, &xe) || xe.ID != "anna-example" || enc.Calls != 1 {
		t.Fatalf("want an *ExistsError before encoding, got %v (%d encodes)", err, enc.Calls)
	}
	opts.Replace = true
	if _, _, err := Clone(context.Background(), enc, clips, consent, opts); err != nil {
		t.Fatalf("with Replace: %v", err)
	}
}

func TestCloneRefusals(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*[]Clip, *Consent, *Options)
		spoil func(*engine.EncodedClip)
		input bool // an *InputError, else an *EncodeError
		want  string
	}{
		{"no consent", func(_ *[]Clip, c *Consent, _ *Options) { c.Statement = "" }, nil, true, "no consent, no clone"},
		{"no name", func(_ *[]Clip, _ *Consent, o *Options) { o.Name = " " }, nil, true, "needs a name"},
		{"bad source", func(_ *[]Clip, c *Consent, _ *Options) { c.Source = "stolen" }, nil, true, "source"},
		{"no clips", func(c *[]Clip, _ *Consent, _ *Options) { *c = nil }, nil, true, "no clips"},
		{"twice", func(c *[]Clip, _ *Consent, _ *Options) { *c = append(*c, (*c)[0]) }, nil, true, "given twice"},
		{"bad transcript", func(c *[]Clip, _ *Consent, _ *Options) { (*c)[0].Transcript = "a\nb" }, nil, true, "clip 1 (take1.wav): transcript not allowed"},
		{"not audio", func(c *[]Clip, _ *Consent, _ *Options) { (*c)[0].Data = []byte("RIFF\x00\x00\x00\x00WAVEjunk") }, nil, true, "take1.wav"},
		{"silence", func(c *[]Clip, _ *Consent, _ *Options) {
			d := (*c)[0].Data
			(*c)[0].Data = append(d[:44:44], make([]byte, len(d)-44)...)
		}, nil, true, "no_speech"},
		{"future consent", func(_ *[]Clip, c *Consent, _ *Options) { c.When = clock.Add(time.Hour) }, nil, true, "in the future"},
		{"bad codes", nil, func(c *engine.EncodedClip) { c.Codes[1][0] = 5000 }, false, "want a code in 0..1023, got 5000"},
		{"codebooks", nil, func(c *engine.EncodedClip) { c.Codes = c.Codes[:9] }, false, "codebooks: want 10, got 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clips, consent, opts := anna(t)
			if tt.edit != nil {
				tt.edit(&clips, &consent, &opts)
			}
			_, _, err := Clone(context.Background(), &clonetest.Encoder{Spoil: tt.spoil}, clips, consent, opts)
			var ie *InputError
			var ee *EncodeError
			if tt.input && !errors.As(err, &ie) || !tt.input && !errors.As(err, &ee) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want input=%v with %q, got %T %v", tt.input, tt.want, err, err)
			}
			if ents, _ := os.ReadDir(filepath.Dir(opts.Output)); len(ents) != 0 {
				t.Fatalf("nothing may be written: %v", ents)
			}
		})
	}
	clips, consent, opts := anna(t)
	fail := engine.Errorf(engine.KindFailed, "encoder crashed")
	_, _, err := Clone(context.Background(), &clonetest.Encoder{Fail: fail}, clips, consent, opts)
	var ee *EncodeError
	if !errors.As(err, &ee) || !errors.Is(err, engine.ErrFailed) || !strings.Contains(err.Error(), "encoder crashed") {
		t.Fatalf("want an *EncodeError over the engine's error, got %v", err)
	}
}

// TestCloneCutClip: a clip that preparation cuts in two is a
// *PiecesError naming the pieces.
func TestCloneCutClip(t *testing.T) {
	a, err := clip.ReadWAV(bytes.NewReader(short(t)))
	if err != nil {
		t.Fatal(err)
	}
	x := append(append([]float32{}, a.Data...), a.Data...)
	clips, consent, opts := anna(t)
	clips[0].Data = clip.EncodeWAV(x, clip.SampleRate)
	enc := &clonetest.Encoder{}
	_, _, err = Clone(context.Background(), enc, clips, consent, opts)
	var pe *PiecesError
	if !errors.As(err, &pe) || pe.Pieces != 2 || len(pe.Spans) != 2 || enc.Calls != 0 {
		t.Fatalf("want a *PiecesError of 2 pieces before encoding, got %v (%d encodes)", err, enc.Calls)
	}
}

// TestCloneRefusesALongClipUndecoded: a clip file 49 minutes long is
// refused from its header under MaxClipDuration; the message names the
// clip by its Name, not its file.
func TestCloneRefusesALongClipUndecoded(t *testing.T) {
	const secs = 49 * 60
	n := secs * 8000
	b := append(clip.WAVHeader(8000, 2*n), make([]byte, 2*n)...)
	path := filepath.Join(t.TempDir(), "clip-4711")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	clips, consent, opts := anna(t)
	clips[0].Data, clips[0].Path = nil, path
	opts.MaxClipDuration = time.Duration(clip.MaxTotal) * time.Second / clip.SampleRate
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := Clone(context.Background(), &clonetest.Encoder{}, clips, consent, opts)
	runtime.ReadMemStats(&after)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "clip 1 (take1.wav)") || !strings.Contains(err.Error(), "2940.0 s long") || strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want an *InputError naming clip 1 (take1.wav) and its length, not %s", err, path)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Fatalf("refusing the clip allocated %d bytes: it was decoded (the file is 47 MB)", n)
	}
}

func TestIDFromName(t *testing.T) {
	for name, want := range map[string]string{"Anna Example": "anna-example", "  Bob_2 (take 3) ": "bob_2-take-3", "Zoë": "zo"} {
		if got, err := IDFromName(name); err != nil || got != want {
			t.Fatalf("%q: want %q, got %q %v", name, want, got, err)
		}
	}
	var ie *InputError
	if _, err := IDFromName("!!!"); !errors.As(err, &ie) {
		t.Fatalf("want an *InputError, got %v", err)
	}
}

// testTranscriber hears text in every clip, or fails with fail; it keeps
// how each clip came.
type testTranscriber struct {
	text string
	fail error
	got  []string // "file PATH NAME" or "data NAME BYTES"
}

func (tr *testTranscriber) File(_ context.Context, path, name string) (string, error) {
	tr.got = append(tr.got, "file "+path+" "+name)
	return tr.text, tr.fail
}

func (tr *testTranscriber) Transcribe(_ context.Context, name string, audio io.Reader) (string, error) {
	b, _ := io.ReadAll(audio)
	tr.got = append(tr.got, fmt.Sprintf("data %s %d", name, len(b)))
	return tr.text, tr.fail
}

// TestCloneTranscribes: a clip without a transcript is refused without a
// Transcriber (ErrNoTranscript, naming the clip), else transcribed from
// its bytes or file under its file name and told to Transcribed; a clip
// with its words is not sent; a failed transcription is a
// *TranscribeError and nothing is encoded.
func TestCloneTranscribes(t *testing.T) {
	clips, consent, opts := anna(t)
	clips[0].Transcript = " "
	enc := &clonetest.Encoder{}
	_, _, err := Clone(context.Background(), enc, clips, consent, opts)
	var ie *InputError
	if !errors.Is(err, ErrNoTranscript) || !errors.As(err, &ie) || ie.Clip != "clip 1 (take1.wav)" || enc.Calls != 0 {
		t.Fatalf("no transcriber: %v, %d encodes", err, enc.Calls)
	}

	path := filepath.Join(t.TempDir(), "take2.wav")
	if err := os.WriteFile(path, short(t), 0o600); err != nil {
		t.Fatal(err)
	}
	clips[0].Filename = "take1.wav"
	clips = append(clips, Clip{Name: "take2", Path: path}, Clip{Name: "take3", Transcript: sentence, Data: short(t)})
	tr := &testTranscriber{text: sentence}
	heard := map[string]string{}
	opts.Transcriber = tr
	opts.Transcribed = func(c, text string) { heard[c] = text }
	res, _, err := Clone(context.Background(), enc, clips, consent, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("data take1.wav %d", len(short(t))), "file " + path + " "}
	if strings.Join(tr.got, "|") != strings.Join(want, "|") {
		t.Fatalf("sent %q, want %q", tr.got, want)
	}
	if len(heard) != 2 || heard["clip 1 (take1.wav)"] != sentence || heard["take2"] != sentence {
		t.Fatalf("told %v", heard)
	}
	for i, r := range res.Voice.References {
		if r.Text != sentence {
			t.Fatalf("reference %d: %q", i, r.Text)
		}
	}

	opts.Output = filepath.Join(t.TempDir(), "other.json")
	enc.Calls = 0
	opts.Transcriber = &testTranscriber{fail: errors.New("503 Service Unavailable")}
	_, _, err = Clone(context.Background(), enc, clips, consent, opts)
	var te *TranscribeError
	if !errors.As(err, &te) || te.Clip != "clip 1 (take1.wav)" || err.Error() != "clip 1 (take1.wav): 503 Service Unavailable" || enc.Calls != 0 {
		t.Fatalf("a failing transcriber: %v, %d encodes", err, enc.Calls)
	}
}

// racingEncoder is an encoder during whose encode another clone of the
// same id finishes: it writes that clone's file into Output.
type racingEncoder struct {
	clonetest.Encoder
	output string
	theirs []byte
}

func (r *racingEncoder) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	if err := os.WriteFile(r.output, r.theirs, 0o600); err != nil {
		return nil, err
	}
	return r.Encoder.Encode(ctx, req, progress)
}

// TestCloneLosesARaceWithoutOverwriting: a clone of an id that another
// clone (on this host or another sharing the directory) writes while this
// one encodes is refused with an *ExistsError, and the other's file stays
// as it was written.
func TestCloneLosesARaceWithoutOverwriting(t *testing.T) {
	clips, consent, opts := anna(t)
	enc := &racingEncoder{output: opts.Output, theirs: []byte(`{"the other clone's file": true}`)}
	_, _, err := Clone(context.Background(), enc, clips, consent, opts)
	var xe *ExistsError
	if !errors.As(err, &xe) || xe.ID != "anna-example" {
		t.Fatalf("want an *ExistsError, got %v", err)
	}
	if b, _ := os.ReadFile(opts.Output); string(b) != string(enc.theirs) {
		t.Fatalf("the other clone's file was overwritten: %.80s", b)
	}
	if ents, _ := os.ReadDir(filepath.Dir(opts.Output)); len(ents) != 1 {
		t.Errorf("%d entries beside the voice, want none: a temporary was left", len(ents)-1)
	}
}
