package serve

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
	"github.com/drama-tts/drama/voices/transcribe"
	"github.com/drama-tts/drama/voices/transcribe/transcribetest"
)

// shapedEncoder encodes each clip into codes of the shape its samples
// call for.
type shapedEncoder struct{}

func (shapedEncoder) Encode(_ context.Context, req engine.EncodeRequest, _ func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	var out []engine.EncodedClip
	for _, c := range req.Clips {
		a, err := clip.ReadWAV(bytes.NewReader(c.Data))
		if err != nil {
			return nil, engine.Invalidf("clip %s: %v", c.ID, err)
		}
		frames := (a.Frames() + 2047) / 2048
		codes := make([][]int, 10)
		for cb := range codes {
			codes[cb] = make([]int, frames)
		}
		out = append(out, engine.EncodedClip{ClipID: c.ID, Codes: codes, Frames: frames, Samples: int64(a.Frames())})
	}
	return out, nil
}

// failingEncoder fails every encode with err.
type failingEncoder struct{ err error }

func (f failingEncoder) Encode(context.Context, engine.EncodeRequest, func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	return nil, f.err
}

func annaRequest(t *testing.T) httpapi.CloneRequest {
	return httpapi.CloneRequest{Name: "Anna Example", ConsentWho: "Anna Example", ConsentStatement: "I agree that my voice is cloned for this test.",
		Clips: []httpapi.CloneClip{{Filename: "take1.wav", Data: speechClip(t, 0), Transcript: "The quick brown fox jumps over the lazy dog."}}}
}

// TestVoiceStoreClone: a clone through the API is saved mode 0600 with
// its consent; the request's faults are invalid (a 400) in the API's
// words, the encoder's failures keep the engine's kind.
func TestVoiceStoreClone(t *testing.T) {
	dir := t.TempDir()
	s := newVoiceStore(dir, shapedEncoder{}, engine.Install{}, nil)
	info, err := s.Clone(context.Background(), annaRequest(t))
	if err != nil || info.ID != "anna-example" || info.Origin != "clone" || info.Source != "consented" {
		t.Fatalf("%v %+v", err, info)
	}
	p := filepath.Join(dir, "anna-example.json")
	v, err := voices.ReadFile(p, nil)
	if err != nil || v.Consent == nil || v.Consent.Who != "Anna Example" {
		t.Fatalf("%v %+v", err, v)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := s.Clone(context.Background(), annaRequest(t)); !errors.Is(err, httpapi.ErrVoiceExists) || !strings.Contains(err.Error(), "DELETE /v1/voices/anna-example") {
		t.Fatalf("the same id again: %v, want the voice exists (a 409) with the API's advice", err)
	}

	bad := annaRequest(t)
	bad.ID, bad.Clips[0].Transcript = "other", "a\nb"
	if _, err := s.Clone(context.Background(), bad); !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "clip 1 (take1.wav): transcript not allowed") {
		t.Fatalf("bad transcript: %v", err)
	}
	for _, tt := range []struct {
		err  error
		kind engine.Kind
	}{
		{engine.Errorf(engine.KindFailed, "encoder crashed"), engine.KindFailed},
		{engine.Invalidf("the encoder refused the clip"), engine.KindInvalid},
		{errors.New("plugin connection lost"), engine.KindFailed},
	} {
		s := newVoiceStore(t.TempDir(), failingEncoder{tt.err}, engine.Install{}, nil)
		_, err := s.Clone(context.Background(), annaRequest(t))
		if k, _ := engine.KindOf(err); k != tt.kind || !strings.Contains(err.Error(), tt.err.Error()) {
			t.Fatalf("encoder failing with %v: %v (kind %v), want kind %v", tt.err, err, k, tt.kind)
		}
	}
}

// countingEncoder is a shapedEncoder that counts its calls.
type countingEncoder struct {
	shapedEncoder
	calls int
}

func (c *countingEncoder) Encode(ctx context.Context, req engine.EncodeRequest, p func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	c.calls++
	return c.shapedEncoder.Encode(ctx, req, p)
}

// TestVoiceStoreCloneTranscribes: a clip sent without its words is refused
// with advice naming --transcribe-url, or transcribed on the server under
// its file name; a failing server is the request's 400, and nothing is
// encoded.
func TestVoiceStoreCloneTranscribes(t *testing.T) {
	ts := transcribetest.New()
	defer ts.Close()
	const sentence = "The quick brown fox jumps over the lazy dog."
	ts.Text = transcribetest.Trim(sentence)
	req := annaRequest(t)
	req.Clips[0].Transcript = ""

	enc := &countingEncoder{}
	s := newVoiceStore(t.TempDir(), enc, engine.Install{}, nil)
	_, err := s.Clone(context.Background(), req)
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "clip 1 (take1.wav): no transcript") || !strings.Contains(err.Error(), "--transcribe-url") {
		t.Fatalf("want a refusal naming --transcribe-url, got %v", err)
	}
	if enc.calls != 0 || len(ts.Requests()) != 0 {
		t.Fatalf("refused, yet %d encodes and %d transcriptions", enc.calls, len(ts.Requests()))
	}

	dir := t.TempDir()
	s = newVoiceStore(dir, enc, engine.Install{}, nil)
	s.transcriber = &transcribe.Client{URL: ts.URL}
	if _, err := s.Clone(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	v, err := voices.ReadFile(filepath.Join(dir, "anna-example.json"), nil)
	if err != nil || v.References[0].Text != sentence {
		t.Fatalf("%v %+v", err, v)
	}
	if r := ts.Requests(); len(r) != 1 || r[0].Filename != "take1.wav" {
		t.Fatalf("requests: %+v", r)
	}

	ts.Text = func(string, []byte) (string, int) { return "", http.StatusServiceUnavailable }
	enc.calls = 0
	s = newVoiceStore(t.TempDir(), enc, engine.Install{}, nil)
	s.transcriber = &transcribe.Client{URL: ts.URL}
	_, err = s.Clone(context.Background(), req)
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "clip 1 (take1.wav): ") || !strings.Contains(err.Error(), "503") || enc.calls != 0 {
		t.Fatalf("a failing server: %v, %d encodes", err, enc.calls)
	}
}

// TestVoiceStoreInlineAndEdit: inline references are made through the
// clone pipeline with its consent rule and leave no file; a clone's name
// is edited in its file, the rest kept.
func TestVoiceStoreInlineAndEdit(t *testing.T) {
	dir := t.TempDir()
	s := newVoiceStore(dir, shapedEncoder{}, engine.Install{}, nil)
	req := annaRequest(t)
	refs, err := s.MakeReferences(context.Background(), req)
	if err != nil || len(refs) != 1 || refs[0].Text != req.Clips[0].Transcript || len(refs[0].Codes) != 10 {
		t.Fatalf("MakeReferences: %v %+v", err, refs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("inline references left %d files", len(ents))
	}
	noConsent := annaRequest(t)
	noConsent.ConsentStatement = ""
	if _, err := s.MakeReferences(context.Background(), noConsent); err == nil {
		t.Fatal("inline references without consent were made")
	}
	info, err := s.Clone(context.Background(), req)
	if err != nil {
		t.Fatalf("clone: %v %+v", err, info)
	}
	name := "Anna Renamed"
	if _, err := s.Edit(context.Background(), info.ID, httpapi.VoiceEdit{Name: &name}); err != nil {
		t.Fatal(err)
	}
	v, err := voices.ReadFile(filepath.Join(dir, info.ID+".json"), nil)
	if err != nil || v.Name != name || v.Consent == nil || v.Consent.Who != "Anna Example" || len(v.References) != 1 {
		t.Fatalf("edited voice: %v %+v", err, v)
	}
	if _, err := s.Edit(context.Background(), "nobody", httpapi.VoiceEdit{Name: &name}); !errors.Is(err, httpapi.ErrVoiceNotFound) {
		t.Fatalf("edit of no voice: %v", err)
	}
}

// speechClip is 16 s of the recorded speech fixture at 44.1 kHz.
func speechClip(t *testing.T, from int) []byte {
	t.Helper()
	a, err := (clip.Decoder{}).Decode(context.Background(), "../../voices/clip/testdata/speech.wav")
	if err != nil {
		t.Fatal(err)
	}
	x := clip.Resample(a.Mono()[from*a.Rate:(from+16)*a.Rate], a.Rate, clip.SampleRate)
	return clip.EncodeWAV(x, clip.SampleRate)
}
