package encodecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/clone/clonetest"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/voices"
	"github.com/drama-tts/drama/voices/clip"
)

const speechWAV = "../../../voices/clip/testdata/speech.wav"

const (
	statement = "I, Anna Example, agree that my voice is cloned for this test."
	sentence  = "The quick brown fox jumps over the lazy dog."
)

var clock = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestFlags(t *testing.T) {
	consent := []string{"--consent-who", "Anna", "--consent-statement", statement}
	cmdtest.CheckFlags(t, NewCmd, []cmdtest.FlagCase[Options]{
		{Args: append([]string{"--name", "Anna", "--manifest", "prep"}, consent...), Check: func(o *Options) bool {
			return o.Manifest == "prep" && o.Source == "consented" && o.Format == string(voices.FormatCloned) && o.Who == "Anna"
		}},
		{Args: append([]string{"--name", "Anna", "a.wav:Hello there.", "b.wav:Yes.", "--format", "drama3-voice/1", "-o", "x.json", "--id", "anna-2"}, consent...), Check: func(o *Options) bool {
			return len(o.Clips) == 2 && o.Format == "drama3-voice/1" && o.Output == "x.json" && o.ID == "anna-2"
		}},
		{Args: []string{"--name", "Robot", "--source", "synthetic", "r.wav:Beep."}, Check: func(o *Options) bool { return o.Source == "synthetic" }},
		{Args: append([]string{"--name", "A", "--manifest", "p", "--plugin", "cuda", "--plugin-dir", "/p", "--engine-bin", "/e", "--model-dir", "/m", "--replace", "--force", "--consent-when", "2026-04-30T10:00:00Z"}, consent...), Check: func(o *Options) bool {
			return o.Plugin == "cuda" && o.PluginDir == "/p" && o.EngineBin == "/e" && o.ModelDir == "/m" && o.Replace && o.Force && o.When != ""
		}},
		{Args: append([]string{"--manifest", "p"}, consent...), WantErr: "--name is required", Code: cmdutil.ExitUsage},
		{Args: append([]string{"--name", "A"}, consent...), WantErr: "give the references", Code: cmdutil.ExitUsage},
		{Args: append([]string{"--name", "A", "--manifest", "p", "a.wav:Hi."}, consent...), WantErr: "not both", Code: cmdutil.ExitUsage},
		{Args: []string{"--name", "A", "--manifest", "p"}, WantErr: "no consent, no clone", Code: cmdutil.ExitUsage},
		{Args: []string{"--name", "A", "--manifest", "p", "--consent-who", "A", "--source", "self"}, WantErr: "no consent, no clone", Code: cmdutil.ExitUsage},
		{Args: append([]string{"--name", "A", "--manifest", "p", "--source", "stolen"}, consent...), WantErr: "--source", Code: cmdutil.ExitUsage},
		{Args: append([]string{"--name", "A", "--manifest", "p", "--format", "wav"}, consent...), WantErr: "--format", Code: cmdutil.ExitUsage},
		{Args: append([]string{"--name", "A", "--manifest", "p", "--consent-when", "yesterday"}, consent...), WantErr: "RFC 3339", Code: cmdutil.ExitUsage},
		{Args: append([]string{"--name", "A", "--manifest", "p", "--id", "Not OK"}, consent...), WantErr: "--id", Code: cmdutil.ExitUsage},
		{Args: append([]string{"--name", "A", "--manifest", "p", "--server", "http://x", "-o", "v.json"}, consent...), WantErr: "--server", Code: cmdutil.ExitUsage},
		{Args: append([]string{"--name", "A", "--manifest", "p", "--server", "http://x", "--consent-when", "2026-04-30T10:00:00Z"}, consent...), WantErr: "--consent-when does not apply", Code: cmdutil.ExitUsage},
	})
}

func TestSplitClip(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "take:1.wav")
	os.WriteFile(odd, nil, 0o644)
	tests := []struct{ arg, path, text string }{
		{"a.wav:Hello: there.", "a.wav", "Hello: there."},
		{odd + ":Words: more.", odd, "Words: more."},
		{"a.wav", "a.wav", ""},
	}
	for _, tt := range tests {
		p, text, _ := splitClip(tt.arg)
		if p != tt.path || text != tt.text {
			t.Fatalf("%q: want %q %q, got %q %q", tt.arg, tt.path, tt.text, p, text)
		}
	}
}

func TestVoiceID(t *testing.T) {
	for name, want := range map[string]string{"Anna Example": "anna-example", "  Bob_2 (take 3) ": "bob_2-take-3", "Zoë": "zo"} {
		got, err := voiceID(&Options{Name: name})
		if err != nil || got != want {
			t.Fatalf("%q: want %q, got %q %v", name, want, got, err)
		}
	}
	if _, err := voiceID(&Options{Name: "!!!"}); cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Fatalf("want a usage error, got %v", err)
	}
}

// testEngine is the fake engine with clonetest's encoder, which reads the
// WAV properly and lets a test spoil its results.
type testEngine struct {
	*enginetest.Fake
	*clonetest.Encoder
}

func (e *testEngine) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	return e.Encoder.Encode(ctx, req, progress)
}

type env struct {
	opts     *Options
	out, err *bytes.Buffer
	eng      *testEngine
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios, "DRAMA_HOME", t.TempDir())
	e := &env{out: out, err: errOut, eng: &testEngine{Fake: enginetest.NewFake(), Encoder: &clonetest.Encoder{}}}
	e.opts = &Options{F: f, Name: "Anna Example", Who: "Anna Example", Statement: statement,
		Source: "consented", Format: string(voices.FormatCloned), Now: func() time.Time { return clock },
		OpenEngine: func(context.Context, *Options) (engine.Engine, func(), error) { return e.eng, func() {}, nil }}
	return e
}

var (
	prepOnce sync.Once
	prepRes  *clip.Result
	prepErr  error
)

// preparedDir prepares the speech fixture (twice, as two clips; once per
// test binary) into a new directory and types in the transcripts when texts
// is set.
func preparedDir(t *testing.T, texts bool) string {
	t.Helper()
	prepOnce.Do(func() {
		a, err := (clip.Decoder{}).Decode(context.Background(), speechWAV)
		if err != nil {
			prepErr = err
			return
		}
		prepRes, prepErr = clip.Prepare([]clip.Clip{{Name: "take1.wav", Audio: a}, {Name: "take2.wav", Audio: a}}, clip.Options{})
	})
	if prepErr != nil {
		t.Fatal(prepErr)
	}
	res := prepRes
	dir := filepath.Join(t.TempDir(), "prep")
	m, err := clip.WriteDir(dir, res, false)
	if err != nil {
		t.Fatal(err)
	}
	if texts {
		for i := range m.References {
			m.References[i].Text = sentence
		}
		b, _ := m.Marshal()
		os.WriteFile(filepath.Join(dir, clip.ManifestName), b, 0o600)
	}
	return dir
}

func TestEncodeManifest(t *testing.T) {
	e := newEnv(t)
	e.opts.Manifest = preparedDir(t, true)
	if err := run(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	root, _ := e.opts.F.Root()
	out := filepath.Join(root, "voices", "anna-example.json")
	v, err := voices.ReadFile(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Format != voices.FormatCloned || v.ID != "anna-example" || v.Source != voices.SourceConsented || len(v.References) != 2 {
		t.Fatalf("voice: %+v", v)
	}
	if c := v.Consent; c == nil || c.Who != "Anna Example" || c.Statement != statement || !c.When.Equal(clock) || !v.Created.Equal(clock) {
		t.Fatalf("consent: %+v created %v", v.Consent, v.Created)
	}
	m, _ := clip.ReadManifest(e.opts.Manifest)
	for i, r := range v.References {
		if r.Samples != m.References[i].Samples || r.Codes.Frames() != m.References[i].Frames || r.Text != sentence {
			t.Fatalf("reference %d: %d samples %d frames, manifest %+v", i, r.Samples, r.Codes.Frames(), m.References[i])
		}
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Fatalf("want mode 0600, got %v", fi.Mode())
	}
	if row := strings.Split(strings.TrimSpace(e.out.String()), "\t"); len(row) != 6 || row[0] != "anna-example" || row[4] != out {
		t.Fatalf("stdout: %q", e.out.String())
	}
	if in := e.eng.Req.Install; in.ModelDir != filepath.Join(root, "full") || e.eng.Req.Clips[0].ID != "ref-01" {
		t.Fatalf("request: %+v", e.eng.Req)
	}

	// again: the file exists
	err = run(context.Background(), e.opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "--replace") || e.eng.Calls != 1 {
		t.Fatalf("want a usage error before encoding, got %v (%d encodes)", err, e.eng.Calls)
	}
	e.opts.Replace = true
	if err := run(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
}

func TestEncodeFormats(t *testing.T) {
	dir := preparedDir(t, true)
	for _, f := range []voices.Format{voices.FormatCUDA, voices.FormatMetal} {
		t.Run(string(f), func(t *testing.T) {
			e := newEnv(t)
			e.opts.Manifest, e.opts.Format = dir, string(f)
			e.opts.Output = filepath.Join(t.TempDir(), "v.json")
			e.opts.F.Global.JSON = true
			if err := run(context.Background(), e.opts); err != nil {
				t.Fatal(err)
			}
			v, err := voices.ReadFile(e.opts.Output, nil)
			if err != nil || v.Format != f || len(v.References) != 2 {
				t.Fatalf("%v %+v", err, v)
			}
			var res result
			if err := json.Unmarshal(e.out.Bytes(), &res); err != nil || res.Format != string(f) || len(res.SHA256) != 64 {
				t.Fatalf("stdout: %v %q", err, e.out.String())
			}
			if fi, _ := os.Stat(e.opts.Output); fi.Mode().Perm() != 0o600 {
				t.Fatalf("want mode 0600, got %v", fi.Mode())
			}
			if f == voices.FormatCUDA && !strings.Contains(e.err.String(), "record of consent") {
				t.Fatalf("want a warning that the consent is not kept, got %q", e.err.String())
			}
		})
	}
}

func TestEncodeMissingTranscript(t *testing.T) {
	e := newEnv(t)
	e.opts.Manifest = preparedDir(t, false)
	err := run(context.Background(), e.opts)
	if err == nil || !strings.Contains(err.Error(), "take1.wav 0.75-20.27 s") || !strings.Contains(err.Error(), "no transcript") || e.eng.Calls != 0 {
		t.Fatalf("want a refusal naming each piece's span, got %v", err)
	}
	m, _ := clip.ReadManifest(e.opts.Manifest)
	m.References[0].Text, m.References[1].Text = "bad <|im_end|> text", sentence
	b, _ := m.Marshal()
	os.WriteFile(filepath.Join(e.opts.Manifest, clip.ManifestName), b, 0o600)
	if err := run(context.Background(), e.opts); err == nil || !strings.Contains(err.Error(), "ref-01.wav") {
		t.Fatalf("want a bad transcript refused, got %v", err)
	}
}

func TestEncodeBadReferenceFile(t *testing.T) {
	e := newEnv(t)
	e.opts.Manifest = preparedDir(t, true)
	os.WriteFile(filepath.Join(e.opts.Manifest, "ref-02.wav"), clip.EncodeWAV(make([]float32, 100), 22050), 0o600)
	err := run(context.Background(), e.opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitMismatch || !strings.Contains(err.Error(), "ref-02.wav") {
		t.Fatalf("want exit 3 naming the file, got %v", err)
	}
}

func TestEncodeChecksCodes(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(*engine.EncodedClip)
		want  string
	}{
		{"range", func(c *engine.EncodedClip) { c.Codes[3][5] = 1024 }, "codebook 3 frame 5: want a code in 0..1023, got 1024"},
		{"semantic range", func(c *engine.EncodedClip) { c.Codes[0][0] = -1 }, "codebook 0 frame 0: want a code in 0..4095, got -1"},
		{"codebooks", func(c *engine.EncodedClip) { c.Codes = c.Codes[:9] }, "codebooks: want 10, got 9"},
		{"frames", func(c *engine.EncodedClip) {
			for i := range c.Codes {
				c.Codes[i] = c.Codes[i][1:]
			}
			c.Frames = 0
		}, "want 421 frames (ceil(860832 samples / 2048)), got 420"},
		{"samples", func(c *engine.EncodedClip) { c.Samples++ }, "samples: want 860832, got 860833"},
		{"clip id", func(c *engine.EncodedClip) { c.ClipID = "other" }, "want clip ref-01, got other"},
	}
	dir := preparedDir(t, true)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.opts.Manifest, e.eng.Spoil = dir, tt.spoil
			err := run(context.Background(), e.opts)
			if cmdutil.ExitCode(err) != cmdutil.ExitEngine || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want exit 4 with %q, got %v", tt.want, err)
			}
			root, _ := e.opts.F.Root()
			if _, err := os.Stat(filepath.Join(root, "voices", "anna-example.json")); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("bad codes must not be saved")
			}
		})
	}
	e := newEnv(t)
	e.opts.Manifest, e.eng.Fail = dir, engine.Errorf(engine.KindFailed, "encoder crashed")
	if err := run(context.Background(), e.opts); cmdutil.ExitCode(err) != cmdutil.ExitEngine || !strings.Contains(err.Error(), "encoder crashed") {
		t.Fatalf("want exit 4, got %v", err)
	}
}

var (
	shortOnce sync.Once
	shortPath string
)

// shortClip is the first 16 s of the speech fixture at 44.1 kHz (three
// sentences, 14.5 s once trimmed), written once per test binary.
func shortClip(t *testing.T) string {
	t.Helper()
	shortOnce.Do(func() {
		a, err := (clip.Decoder{}).Decode(context.Background(), speechWAV)
		if err != nil {
			return
		}
		x := clip.Resample(a.Data[:16*a.Rate], a.Rate, clip.SampleRate)
		p := filepath.Join(binDir, "short.wav")
		if os.WriteFile(p, clip.EncodeWAV(x, clip.SampleRate), 0o644) == nil {
			shortPath = p
		}
	})
	if shortPath == "" {
		t.Fatal("could not make the short clip")
	}
	return shortPath
}

func TestEncodeClipArguments(t *testing.T) {
	e := newEnv(t)
	e.opts.Clips = []string{shortClip(t) + ":" + sentence}
	e.opts.Output = filepath.Join(t.TempDir(), "anna.json")
	if err := run(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	v, err := voices.ReadFile(e.opts.Output, nil)
	if err != nil || len(v.References) != 1 || v.References[0].Text != sentence || v.References[0].Samples < 10*clip.SampleRate {
		t.Fatalf("%v %+v", err, v)
	}

	// a clip that is cut in two cannot take one transcript
	a, _ := (clip.Decoder{}).Decode(context.Background(), shortClip(t))
	long := filepath.Join(t.TempDir(), "long.wav")
	x := append(append([]float32{}, a.Data...), a.Data...) // 32 s, 30.9 s once trimmed
	os.WriteFile(long, clip.EncodeWAV(x, clip.SampleRate), 0o644)
	e = newEnv(t)
	e.opts.Clips = []string{long + ":" + sentence}
	err = run(context.Background(), e.opts)
	if err == nil || !strings.Contains(err.Error(), "cut into 2 references") || !strings.Contains(err.Error(), "drama voice prepare") || e.eng.Calls != 0 {
		t.Fatalf("want a refusal pointing to drama voice prepare, got %v", err)
	}

	// no transcript; a silent clip
	e.opts.Clips = []string{shortClip(t)}
	if err := run(context.Background(), e.opts); cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "no transcript") {
		t.Fatalf("want a usage error, got %v", err)
	}
	silent := filepath.Join(t.TempDir(), "silent.wav")
	os.WriteFile(silent, clip.EncodeWAV(make([]float32, 15*clip.SampleRate), clip.SampleRate), 0o644)
	e.opts.Clips = []string{silent + ":Nothing."}
	if err := run(context.Background(), e.opts); !errors.Is(err, clip.ErrNoSpeech) {
		t.Fatalf("want no_speech, got %v", err)
	}
}

func TestEncodeSyntheticAndConsentTime(t *testing.T) {
	e := newEnv(t)
	e.opts.Clips = []string{shortClip(t) + ":" + sentence}
	e.opts.Source, e.opts.Who, e.opts.Statement = "synthetic", "", ""
	e.opts.Output = filepath.Join(t.TempDir(), "robot.json")
	if err := run(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	v, err := voices.ReadFile(e.opts.Output, nil)
	if err != nil || v.Source != voices.SourceSynthetic || v.Consent != nil {
		t.Fatalf("%v %+v", err, v)
	}

	e = newEnv(t)
	e.opts.Clips = []string{shortClip(t) + ":" + sentence}
	e.opts.Output = filepath.Join(t.TempDir(), "a.json")
	e.opts.When = "2026-04-30T09:00:00+02:00"
	if err := run(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	if v, err = voices.ReadFile(e.opts.Output, nil); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 4, 30, 7, 0, 0, 0, time.UTC); !v.Consent.When.Equal(want) {
		t.Fatalf("consent when: want %v, got %v", want, v.Consent.When)
	}
	e.opts.When, e.opts.Replace = "2026-06-01T00:00:00Z", true
	if err := run(context.Background(), e.opts); err == nil || !strings.Contains(err.Error(), "future") {
		t.Fatalf("want a consent time in the future refused, got %v", err)
	}
}

func TestEncodeThroughServer(t *testing.T) {
	var form map[string][]string
	var files []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/voices" {
			http.Error(w, "wrong route", http.StatusNotFound)
			return
		}
		if err := r.ParseMultipartForm(64 << 20); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		form = r.MultipartForm.Value
		for _, fh := range r.MultipartForm.File["clip"] {
			files = append(files, fh.Filename)
		}
		if form["name"][0] == "Fail" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"message":"clip 1: noisy_background"}}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"anna-example","name":"Anna Example","origin":"clone","source":"consented","references":2,"frames":842,"seconds":39.1}`))
	}))
	defer srv.Close()
	e := newEnv(t)
	e.opts.Manifest, e.opts.Server = preparedDir(t, true), srv.URL
	if err := run(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	if form["id"][0] != "anna-example" || form["consent_who"][0] != "Anna Example" || form["consent_statement"][0] != statement ||
		len(form["transcript"]) != 2 || form["transcript"][1] != sentence || strings.Join(files, ",") != "ref-01.wav,ref-02.wav" {
		t.Fatalf("form %v files %v", form, files)
	}
	if !strings.HasPrefix(e.out.String(), "anna-example\tAnna Example\tconsented\t2\t842\t") || e.eng.Calls != 0 {
		t.Fatalf("stdout %q, %d local encodes", e.out.String(), e.eng.Calls)
	}
	e.opts.Name = "Fail"
	if err := run(context.Background(), e.opts); cmdutil.ExitCode(err) != cmdutil.ExitEngine || !strings.Contains(err.Error(), "noisy_background") {
		t.Fatalf("want exit 4 with the server's message, got %v", err)
	}
}
