package clip

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func prepared(t *testing.T) *Result {
	t.Helper()
	fx := loadSpeech(t)
	res, err := Prepare([]Clip{{Name: "speech.wav", Audio: mono(fx.x, SampleRate)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestWriteDirAndReadManifest(t *testing.T) {
	res := prepared(t)
	dir := filepath.Join(t.TempDir(), "out")
	m, err := WriteDir(dir, res, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := got.References[0]
	if len(got.References) != 1 || r.File != "ref-01.wav" || r.Samples != len(res.References[0].Samples) || r.Text != "" {
		t.Fatalf("manifest: %+v", got.References)
	}
	if got.Clips[0].SNRDB == nil || got.Clips[0].References != 1 || m.Format != ManifestFormat {
		t.Fatalf("clip summary: %+v", got.Clips[0])
	}
	a, err := (Decoder{}).Decode(context.Background(), filepath.Join(dir, r.File))
	if err != nil || a.Rate != SampleRate || a.Channels != 1 || a.Coding != "pcm16" || a.Frames() != r.Samples {
		t.Fatalf("reference file: %v %+v", err, a)
	}
	for _, name := range []string{r.File, ManifestName} {
		fi, _ := os.Stat(filepath.Join(dir, name))
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: want mode 0600, got %v", name, fi.Mode())
		}
	}

	// a second run must not overwrite transcripts unless asked, and then keeps them
	b, _ := os.ReadFile(filepath.Join(dir, ManifestName))
	typed := strings.Replace(string(b), `"text": ""`, `"text": "The quick brown fox."`, 1)
	os.WriteFile(filepath.Join(dir, ManifestName), []byte(typed), 0o600)
	if _, err := WriteDir(dir, res, false); !errors.Is(err, ErrManifestExists) {
		t.Fatalf("want ErrManifestExists, got %v", err)
	}
	m, err = WriteDir(dir, res, true)
	if err != nil || m.References[0].Text != "The quick brown fox." {
		t.Fatalf("replace should keep the transcript: %v %+v", err, m.References)
	}
}

func TestParseManifestBad(t *testing.T) {
	good := `{"format":"drama-clip-manifest/1","sample_rate":44100,"references":[{"file":"ref-01.wav","source":"a.wav","start":0,"end":1,"samples":44100,"frames":22,"speech_dbfs":-20,"peak_dbfs":-3,"gain_db":1,"text":""}],"clips":[],"warnings":[]}`
	if _, err := ParseManifest("m.json", []byte(good)); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, from, to, field string }{
		{"format", `clip-manifest/1`, `clip-manifest/2`, "format"},
		{"rate", `44100,"ref`, `48000,"ref`, "sample_rate"},
		{"path", `"ref-01.wav"`, `"../x.wav"`, "references[0].file"},
		{"abs path", `"ref-01.wav"`, `"/etc/passwd"`, "references[0].file"},
		{"frames", `"frames":22`, `"frames":21`, "references[0].frames"},
		{"too long", `"samples":44100,"frames":22`, `"samples":1323001,"frames":646`, "references[0].samples"},
		{"span", `"end":1`, `"end":-1`, "references[0].end"},
		{"no refs", `[{"file":"ref-01.wav","source":"a.wav","start":0,"end":1,"samples":44100,"frames":22,"speech_dbfs":-20,"peak_dbfs":-3,"gain_db":1,"text":""}]`, `[]`, "references"},
		{"unknown field", `"text":""`, `"text":"","extra":1`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseManifest("m.json", []byte(strings.Replace(good, tt.from, tt.to, 1)))
			var me *ManifestError
			if !errors.As(err, &me) || me.Field != tt.field || !strings.Contains(err.Error(), "m.json") {
				t.Fatalf("want a ManifestError on %q, got %v", tt.field, err)
			}
		})
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"format":"drama-clip-manifest/1","sample_rate":44100,"references":[{"file":"ref-01.wav","source":"a.wav","start":0,"end":1,"samples":44100,"frames":22,"speech_dbfs":-20,"peak_dbfs":-3,"gain_db":1,"text":""}],"clips":[],"warnings":[]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest("m.json", b)
		if err != nil {
			return
		}
		for _, r := range m.References {
			if filepath.Base(r.File) != r.File || r.Frames != (r.Samples+2047)/2048 {
				t.Fatalf("accepted a bad reference: %+v", r)
			}
		}
	})
}
