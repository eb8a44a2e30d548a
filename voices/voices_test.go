package voices

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t testing.TB, name string) *Voice {
	t.Helper()
	v, err := ReadFile(filepath.Join("testdata", name), nil)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", name, err)
	}
	return v
}

func mustMarshal(t testing.TB, v *Voice) []byte {
	t.Helper()
	out, err := Marshal(v, nil)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return out
}

// checkGolden compares got with testdata/golden/name, rewriting it under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: output differs from the golden file (%d bytes, want %d)\n%s", name, len(got), len(want), got)
	}
}

// The fixtures were written by scripts/make-voice-fixtures.py, an
// independent implementation of the canonical layout: reading and writing
// them back must give the same bytes.
func TestFixturesRoundTrip(t *testing.T) {
	for _, name := range []string{"cuda.json", "metal.json", "cloned.json"} {
		t.Run(name, func(t *testing.T) {
			v := mustParse(t, name)
			if got, want := mustMarshal(t, v), mustRead(t, name); !bytes.Equal(got, want) {
				t.Errorf("Marshal(ReadFile(%s)) differs from the file:\n%s", name, got)
			}
			data := mustRead(t, name)
			if !IsCanonical(data, v) {
				t.Error("IsCanonical is false for the canonical file")
			}
			spaced := bytes.Replace(data, []byte(`"id": `), []byte(`"id":  `), 1)
			if !IsCanonical(data, v) || IsCanonical(spaced, v) {
				t.Error("IsCanonical is true for a file with extra space")
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	v := mustParse(t, "cloned.json")
	want := &Consent{Who: "Anna Example", When: time.Date(2026, 5, 1, 11, 58, 0, 0, time.UTC), Statement: "I, Anna Example, agree that my voice may be cloned for this project."}
	if !reflect.DeepEqual(v.Consent, want) {
		t.Errorf("Consent = %+v, want %+v", v.Consent, want)
	}
	if v.Source != SourceConsented || v.ID != "fixture" || v.Name != "Fixture Voice" || len(v.References) != 4 {
		t.Errorf("got source %q id %q name %q refs %d", v.Source, v.ID, v.Name, len(v.References))
	}
	if r := v.References[0]; r.Samples != 7*2048-100 || r.Codes.Frames() != 7 || r.Codes[0][0] != 4095 {
		t.Errorf("reference 0 = samples %d frames %d code %d", r.Samples, r.Codes.Frames(), r.Codes[0][0])
	}
	if !v.IsClone() || v.FileMode() != 0o600 {
		t.Errorf("cloned voice: IsClone %v, FileMode %o", v.IsClone(), v.FileMode())
	}
}

type fishExpected struct {
	Text   string  `json:"text"`
	Codes  [][]int `json:"codes"`
	SHA256 string  `json:"codes_sha256"`
}

func TestReadFishReference(t *testing.T) {
	var exp map[string]fishExpected
	if err := json.Unmarshal(mustRead(t, "fish/expected.json"), &exp); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ref0", "ref1", "ref2", "ref3"} {
		r, err := ReadFishReference(filepath.Join("testdata", "fish", name+".npy"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		e := exp[name]
		if r.Text != e.Text || !reflect.DeepEqual([][]int(r.Codes), e.Codes) {
			t.Errorf("%s: got text %q codes %v, want %q %v", name, r.Text, r.Codes, e.Text, e.Codes)
		}
		if got := r.Codes.SHA256(); got != e.SHA256 {
			t.Errorf("%s: SHA256 = %s, numpy says %s", name, got, e.SHA256)
		}
	}
}

func TestFishToCUDA(t *testing.T) {
	v := &Voice{Format: FormatCUDA, ID: "fixture", Name: "Fixture Voice"}
	for _, name := range []string{"ref0", "ref1"} {
		r, err := ReadFishReference(filepath.Join("testdata", "fish", name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		v.References = append(v.References, r)
	}
	if got := mustMarshal(t, v); !bytes.Equal(got, mustRead(t, "cuda.json")) {
		t.Errorf("voice from .npy and .lab differs from cuda.json:\n%s", got)
	}
}

func TestConvertCUDAMetal(t *testing.T) {
	cuda := mustParse(t, "cuda.json")
	conv, err := Convert(cuda, FormatMetal, ConvertOptions{Source: SourceSynthetic, Note: "fixture voice"})
	if err != nil {
		t.Fatal(err)
	}
	metal := mustMarshal(t, conv.Voice)
	if !bytes.Equal(metal, mustRead(t, "metal.json")) {
		t.Errorf("CUDA to Metal differs from metal.json:\n%s", metal)
	}
	back, err := Parse(metal, nil)
	if err != nil {
		t.Fatal(err)
	}
	conv, err = Convert(back, FormatCUDA, ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustMarshal(t, conv.Voice); !bytes.Equal(got, mustRead(t, "cuda.json")) {
		t.Errorf("CUDA to Metal to CUDA is not byte-identical:\n%s", got)
	}
	if !reflect.DeepEqual(conv.Dropped, []string{"source", "note"}) {
		t.Errorf("Dropped = %v, want [source note]", conv.Dropped)
	}
}

func TestConvertGoldens(t *testing.T) {
	cloned := mustRead(t, "cloned.json")
	created := time.Date(2026, 5, 2, 9, 30, 0, 0, time.UTC)
	cases := []struct {
		in, golden string
		to         Format
		opts       ConvertOptions
	}{
		{"cloned.json", "cloned-to-metal.json", FormatMetal, ConvertOptions{Origin: "localrouter-voice-codes/1 sha256:" + FileSHA256(cloned)}},
		{"cloned.json", "cloned-to-cuda.json", FormatCUDA, ConvertOptions{}},
		{"cuda.json", "cuda-to-cloned.json", FormatCloned, ConvertOptions{Source: SourceSynthetic, Created: created}},
		{"cuda.json", "cuda-to-cloned-consented.json", FormatCloned, ConvertOptions{Source: SourceConsented, Created: created,
			Consent: &Consent{Who: "Anna Example", When: created.Add(-time.Hour), Statement: "I agree."}}},
		{"metal.json", "metal-to-cloned.json", FormatCloned, ConvertOptions{Created: created, ID: "renamed", Name: "Renamed"}},
		{"cuda.json", "cuda-to-metal-origin.json", FormatMetal, ConvertOptions{Source: SourceSelf, Note: "operator's own voice", Origin: "drama3-voice/1 sha256:" + FileSHA256(mustRead(t, "cuda.json"))}},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			conv, err := Convert(mustParse(t, c.in), c.to, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			out := mustMarshal(t, conv.Voice)
			checkGolden(t, c.golden, out)
			again, err := Parse(out, nil)
			if err != nil {
				t.Fatalf("output does not parse back: %v", err)
			}
			if !bytes.Equal(mustMarshal(t, again), out) {
				t.Error("output is not canonical")
			}
		})
	}
}

func TestConvertCodesUnchanged(t *testing.T) {
	in := mustParse(t, "cloned.json")
	for _, to := range Formats {
		conv, err := Convert(in, to, ConvertOptions{})
		if err != nil {
			t.Fatalf("%s: %v", to, err)
		}
		for i, r := range conv.Voice.References {
			if r.Codes.SHA256() != in.References[i].Codes.SHA256() || r.Text != in.References[i].Text {
				t.Errorf("%s: reference %d changed", to, i)
			}
		}
	}
}

func TestConvertRefusals(t *testing.T) {
	cuda, metal := mustParse(t, "cuda.json"), mustParse(t, "metal.json")
	cases := []struct {
		name string
		v    *Voice
		to   Format
		opts ConvertOptions
		want error
	}{
		{"no source for metal", cuda, FormatMetal, ConvertOptions{}, ErrSource},
		{"no source for cloned", cuda, FormatCloned, ConvertOptions{Created: time.Now()}, ErrSource},
		{"contradicting source", metal, FormatCloned, ConvertOptions{Source: SourceSelf, Created: time.Now()}, ErrSource},
		{"self without consent", cuda, FormatCloned, ConvertOptions{Source: SourceSelf, Created: time.Now()}, ErrConsent},
		{"no created", cuda, FormatCloned, ConvertOptions{Source: SourceSynthetic}, ErrConsent},
		{"unknown format", cuda, Format("x/1"), ConvertOptions{}, ErrUnknownFormat},
		{"bad note", cuda, FormatMetal, ConvertOptions{Source: SourceSynthetic, Note: "line\nbreak"}, ErrText},
		{"bad id", cuda, FormatMetal, ConvertOptions{Source: SourceSynthetic, ID: "Bad Id"}, ErrID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Convert(c.v, c.to, c.opts)
			if !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestCodesHelpers(t *testing.T) {
	c := makeCodes(3, 1)
	fm := c.FrameMajor()
	if len(fm) != 3 || len(fm[0]) != NumCodebooks || fm[2][9] != c[9][2] {
		t.Fatalf("FrameMajor = %v", fm)
	}
	if !reflect.DeepEqual(transpose(fm), c) {
		t.Error("transpose(FrameMajor(c)) != c")
	}
	if (Codes{{1, 2}, {3}}).FrameMajor() != nil || (Codes{}).Frames() != 0 {
		t.Error("malformed codes not refused")
	}
	cl := c.Clone()
	cl[0][0]++
	if c[0][0] == cl[0][0] {
		t.Error("Clone shares rows")
	}
	if got := Seconds(646); got < 29.99 || got > 30.01 {
		t.Errorf("Seconds(646) = %v", got)
	}
}

func TestAppendCode(t *testing.T) {
	for _, x := range []int{0, 7, 9, 10, 99, 100, 999, 1000, 4095, 9999, 10000, 123456, -1, -4096} {
		if got, want := string(appendCode(nil, x)), fmt.Sprint(x); got != want {
			t.Errorf("appendCode(%d) = %q", x, got)
		}
	}
}
