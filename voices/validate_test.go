package voices

import (
	"errors"
	"strings"
	"testing"
)

// mutate returns the fixture with the first old replaced by new.
func mutate(t *testing.T, name, old, new string) []byte {
	t.Helper()
	s := string(mustRead(t, name))
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not contain %q", name, old)
	}
	return []byte(strings.Replace(s, old, new, 1))
}

// problemFields returns the fields of a *ValidationError or *FieldError.
func problemFields(err error) []string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		var out []string
		for _, p := range ve.Problems {
			out = append(out, p.Field)
		}
		return out
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return []string{fe.Field}
	}
	return nil
}

const cudaRef0 = `"text": "Hello there, \"friend\" — café.",`

func TestValidationFailures(t *testing.T) {
	cases := []struct {
		name, file, old, new string
		want                 error
		field                string
	}{
		{"unknown format", "cuda.json", `"drama3-voice/1"`, `"drama3-voice/2"`, ErrUnknownFormat, "format"},
		{"unknown field", "cuda.json", `"id": "fixture",`, `"id": "fixture", "extra": 1,`, ErrUnknownField, "extra"},
		{"field of another format", "cuda.json", `"id": "fixture",`, `"id": "fixture", "note": "",`, ErrUnknownField, "note"},
		{"case folded field", "cuda.json", `"id": "fixture",`, `"ID": "fixture",`, ErrUnknownField, "ID"},
		{"missing field", "cuda.json", `  "name": "Fixture Voice",` + "\n", "", ErrMissingField, "name"},
		{"duplicate field", "cuda.json", `"id": "fixture",`, `"id": "fixture", "id": "other",`, ErrDuplicate, "id"},
		{"unknown reference field", "cuda.json", `"frames": 7,`, `"frames": 7, "samples": 3,`, ErrUnknownField, "references[0].samples"},
		{"missing codes_sha256", "cuda.json", `"codes_sha256": "6fea0bb5ea69eef25d4652ca1871f964296fd0ddcab0eae1624de4af8337baa2",`, "", ErrMissingField, "references[0].codes_sha256"},
		{"bad id", "cuda.json", `"id": "fixture"`, `"id": "Fixture"`, ErrID, "id"},
		{"id with space", "metal.json", `"id": "fixture"`, `"id": "fix ture"`, ErrID, "id"},
		{"empty name", "cuda.json", `"name": "Fixture Voice"`, `"name": ""`, ErrText, "name"},
		{"name too long", "cuda.json", `"name": "Fixture Voice"`, `"name": "` + strings.Repeat("n", 129) + `"`, ErrText, "name"},
		{"name control", "cuda.json", `"name": "Fixture Voice"`, `"name": "Fix\u001bture"`, ErrText, "name"},
		{"id too long", "cuda.json", `"id": "fixture"`, `"id": "` + strings.Repeat("a", 65) + `"`, ErrID, "id"},
		{"id leading dash", "cuda.json", `"id": "fixture"`, `"id": "-fixture"`, ErrID, "id"},
		{"id wrong type", "cuda.json", `"id": "fixture"`, `"id": 7`, ErrType, "id"},
		{"647 frames", "cuda.json", `[4095,800,`, `[` + strings.Repeat("1,", 646) + `4095,800,`, ErrLimit, "references[0].vq_codes[0]"},
		{"huge integer", "cuda.json", `"frames": 7,`, `"frames": 7000000000000000000,`, ErrLimit, "references[0].frames"},
		{"missing references", "cuda.json", `"references": [`, `"x": [`, ErrUnknownField, "x"},
		{"frames mismatch", "cuda.json", `"frames": 7,`, `"frames": 8,`, ErrFrames, "references[0].frames"},
		{"checksum mismatch", "cuda.json", `6fea0bb5`, `7fea0bb5`, ErrChecksum, "references[0].codes_sha256"},
		{"checksum not hex", "cuda.json", `6fea0bb5`, `6FEA0BB5`, ErrChecksum, "references[0].codes_sha256"},
		{"semantic code out of range", "cuda.json", `[4095,`, `[4096,`, ErrCodeRange, "references[0].codes"},
		{"residual code out of range", "cuda.json", `[1023,`, `[1024,`, ErrCodeRange, "references[0].codes"},
		{"negative code", "metal.json", `[4095,1023,`, `[-1,1023,`, ErrCodeRange, "references[0].codes"},
		{"float code", "cuda.json", `[4095,`, `[4095.0,`, ErrType, "references[0].vq_codes[0]"},
		{"short codebook row", "cuda.json", `[4095,800,`, `[800,`, ErrShape, "references[0].vq_codes[1]"},
		{"nine codebooks", "cuda.json", "        [4095,800,3921,547,1350,2209,336],\n", "", ErrShape, "references[0].vq_codes"},
		{"metal frame of 9", "metal.json", `[4095,1023,`, `[1023,`, ErrShape, "references[0].codes[0]"},
		{"transcript special token", "cuda.json", cudaRef0, `"text": "Hello <think> there",`, ErrTranscript, "references[0].text"},
		{"transcript structural mark", "cuda.json", cudaRef0, `"text": "Hello <|im_end|> there",`, ErrTranscript, "references[0].text"},
		{"transcript line break", "cuda.json", cudaRef0, `"text": "Hello\nthere",`, ErrTranscript, "references[0].text"},
		{"transcript tab", "cuda.json", cudaRef0, `"text": "Hello\tthere",`, ErrTranscript, "references[0].text"},
		{"transcript not NFC", "cuda.json", cudaRef0, `"text": "cafe\u0301",`, ErrTranscript, "references[0].text"},
		{"transcript untrimmed", "cuda.json", cudaRef0, `"text": " Hello",`, ErrTranscript, "references[0].text"},
		{"transcript empty", "cuda.json", cudaRef0, `"text": "   ",`, ErrTranscript, "references[0].text"},
		{"transcript too long", "cuda.json", cudaRef0, `"text": "` + strings.Repeat("a", 2001) + `",`, ErrTranscript, "references[0].text"},
		{"transcript invalid UTF-8", "cuda.json", cudaRef0, "\"text\": \"caf\xe9\",", ErrText, "references[0].text"},
		{"transcript lone surrogate", "cuda.json", cudaRef0, `"text": "a\ud800b",`, ErrTranscript, "references[0].text"},
		{"metal bad source", "metal.json", `{"kind": "synthetic"}`, `{"kind": "cloned"}`, ErrSource, "source.kind"},
		{"metal source extra key", "metal.json", `{"kind": "synthetic"}`, `{"kind": "synthetic", "who": "x"}`, ErrUnknownField, "source.who"},
		{"metal note control", "metal.json", `"note": "fixture voice"`, `"note": "fix\u0007ture"`, ErrText, "note"},
		{"metal note too long", "metal.json", `"note": "fixture voice"`, `"note": "` + strings.Repeat("n", 1001) + `"`, ErrText, "note"},
		{"cloned no consent", "cloned.json", `"consent": {`, `"consent": null, "x": {`, ErrUnknownField, "x"},
		{"cloned consent after created", "cloned.json", `"when": "2026-05-01T11:58:00Z"`, `"when": "2026-05-01T12:00:01Z"`, ErrConsent, "consent.when"},
		{"cloned consent not UTC", "cloned.json", `"when": "2026-05-01T11:58:00Z"`, `"when": "2026-05-01T11:58:00+02:00"`, ErrConsent, "consent.when"},
		{"cloned created bad", "cloned.json", `"created": "2026-05-01T12:00:00Z"`, `"created": "yesterday"`, ErrConsent, "created"},
		{"cloned empty who", "cloned.json", `"who": "Anna Example"`, `"who": ""`, ErrConsent, "consent.who"},
		{"cloned who too long", "cloned.json", `"who": "Anna Example"`, `"who": "` + strings.Repeat("w", 201) + `"`, ErrConsent, "consent.who"},
		{"cloned statement too long", "cloned.json", `"statement": "I, Anna`, `"statement": "` + strings.Repeat("s", 2001) + `I, Anna`, ErrConsent, "consent.statement"},
		{"cloned statement control", "cloned.json", `"statement": "I, Anna`, `"statement": "\u0000I, Anna`, ErrConsent, "consent.statement"},
		{"cloned consent missing when", "cloned.json", `"when": "2026-05-01T11:58:00Z",`, ``, ErrMissingField, "consent.when"},
		{"cloned consent missing", "cloned.json", `"consent": {`, `"consentx": {`, ErrConsent, "consent"},
		{"cloned empty statement", "cloned.json", `"statement": "I, Anna`, `"statement": "", "x": "`, ErrUnknownField, "consent.x"},
		{"cloned synthetic with consent", "cloned.json", `{"kind": "consented"}`, `{"kind": "synthetic"}`, ErrConsent, "consent"},
		{"cloned samples mismatch", "cloned.json", `"samples": 14236,`, `"samples": 20000,`, ErrFrames, "references[0].frames"},
		{"cloned samples zero", "cloned.json", `"samples": 14236,`, `"samples": 0,`, ErrLimit, "references[0].samples"},
		{"cloned samples over 30 s", "cloned.json", `"samples": 14236,`, `"samples": 1323001,`, ErrLimit, "references[0].samples"},
		{"no references", "cuda.json", `"references": [`, `"references": [], "x": [`, ErrUnknownField, "x"},
		{"syntax", "cuda.json", `"id": "fixture",`, `"id": "fixture",,`, ErrSyntax, ""},
		{"trailing data", "cuda.json", "  ]\n}\n", "  ]\n}\n{}", ErrSyntax, ""},
		{"byte order mark", "cuda.json", "{\n  \"format\"", "\xef\xbb\xbf{\n  \"format\"", ErrSyntax, ""},
		{"wrong type", "cuda.json", `"frames": 7,`, `"frames": "7",`, ErrType, "references[0].frames"},
		{"leading zero", "cuda.json", `"frames": 7,`, `"frames": 07,`, ErrSyntax, "references[0].frames"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(mutate(t, c.file, c.old, c.new), nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if fields := problemFields(err); !contains(fields, c.field) {
				t.Errorf("problem fields %q, want %q among them (err %v)", fields, c.field, err)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestValidationLimits(t *testing.T) {
	v := mustParse(t, "cuda.json")
	ref := v.References[0]
	many := func(n int, r Reference) []Reference {
		out := make([]Reference, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	long := Reference{Text: "long", Codes: makeCodes(MaxFrames+1, 1)}
	full := Reference{Text: "full", Codes: makeCodes(MaxFrames, 1)}
	cases := []struct {
		name  string
		v     *Voice
		want  error
		field string
	}{
		{"no references", &Voice{Format: FormatCUDA, ID: "a", Name: "A"}, ErrLimit, "references"},
		{"nine references", &Voice{Format: FormatCUDA, ID: "a", Name: "A", References: many(9, ref)}, ErrLimit, "references"},
		{"five metal references", &Voice{Format: FormatMetal, ID: "a", Name: "A", Source: SourceSelf, References: many(5, ref)}, ErrLimit, "references"},
		{"647 frames", &Voice{Format: FormatCUDA, ID: "a", Name: "A", References: []Reference{long}}, ErrLimit, "references[0].frames"},
		{"over 60 s", &Voice{Format: FormatCUDA, ID: "a", Name: "A", References: many(3, full)}, ErrLimit, "references"},
		{"no codes", &Voice{Format: FormatCUDA, ID: "a", Name: "A", References: []Reference{{Text: "x"}}}, ErrShape, "references[0].codes"},
		{"metal no source", &Voice{Format: FormatMetal, ID: "a", Name: "A", References: many(1, ref)}, ErrSource, "source.kind"},
		{"cloned over 60 s", &Voice{Format: FormatCloned, ID: "a", Name: "A", Source: SourceSynthetic, Created: v0time,
			References: many(3, Reference{Text: "t", Samples: MaxReferenceSamples, Codes: makeCodes(MaxFrames, 1)})}, ErrLimit, "references"},
		{"cloned self without consent", &Voice{Format: FormatCloned, ID: "a", Name: "A", Source: SourceSelf, Created: v0time,
			References: []Reference{{Text: "t", Samples: 2048, Codes: makeCodes(1, 1)}}}, ErrConsent, "consent"},
		{"unknown format", &Voice{Format: "x"}, ErrUnknownFormat, "format"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.v.Validate(nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if fields := problemFields(err); !contains(fields, c.field) {
				t.Errorf("problem fields %q, want %q", fields, c.field)
			}
		})
	}
}

func TestMetalFileSizeLimit(t *testing.T) {
	v := &Voice{Format: FormatMetal, ID: "big", Name: "Big", Source: SourceSynthetic}
	for range MaxMetalReferences {
		v.References = append(v.References, Reference{Text: strings.Repeat("語", MaxTextRunes), Codes: makeCodes(MaxFrames, 1000)})
	}
	v.Note = strings.Repeat("n", MaxNoteRunes)
	data, err := Marshal(v, nil)
	if err != nil {
		t.Fatalf("largest Metal voice refused: %v", err)
	}
	padded := append(data[:len(data)-2:len(data)-2], []byte(strings.Repeat(" ", MaxMetalFileSize-len(data)+1)+"}\n")...)
	if _, err := Parse(padded, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Parse of %d bytes: err = %v, want ErrTooLarge", len(padded), err)
	}
}

func TestProblemsAllListed(t *testing.T) {
	data := mutate(t, "cuda.json", `"id": "fixture"`, `"id": "Bad"`)
	data = []byte(strings.Replace(string(data), `[4095,`, `[4096,`, 1))
	data = []byte(strings.Replace(string(data), `"text": "日本語のテキスト。"`, `"text": "<think>"`, 1))
	_, err := Parse(data, nil)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	if len(ve.Problems) != 4 { // id, the checksum of reference 0, its range, the transcript of reference 1
		t.Errorf("got %d problems, want 4: %v", len(ve.Problems), err)
	}
	if ve.Problems[len(ve.Problems)-1].Reference() != 1 {
		t.Errorf("last problem %v: want reference 1", ve.Problems[len(ve.Problems)-1])
	}
}

func TestTokenizerSpecialTokens(t *testing.T) {
	toks, err := ReadTokenizerFile("testdata/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"<think>", "</think>", "[custom]"}
	if strings.Join(toks, " ") != strings.Join(want, " ") {
		t.Errorf("tokens = %q, want %q", toks, want)
	}
	data := mutate(t, "cuda.json", cudaRef0, `"text": "say [custom] now",`)
	if _, err := Parse(data, nil); err != nil {
		t.Errorf("default list: %v", err)
	}
	if _, err := Parse(data, &Options{SpecialTokens: toks}); !errors.Is(err, ErrTranscript) {
		t.Errorf("tokenizer list: err = %v, want ErrTranscript", err)
	}
	if got := TranscriptSpecials([]string{"<|semantic:0|>", " ", "<think>", "x|>", "<think>", "[custom]"}); strings.Join(got, " ") != "<think> [custom]" {
		t.Errorf("TranscriptSpecials = %q, want [<think> [custom]]", got)
	}
	if _, err := SpecialTokensFromTokenizer(strings.NewReader(`{"model": {}}`)); err == nil {
		t.Error("tokenizer.json without added_tokens accepted")
	}
	if _, err := ReadTokenizerFile("testdata/missing.json"); err == nil {
		t.Error("missing tokenizer accepted")
	}
}

func TestReferenceValidate(t *testing.T) {
	r := mustParse(t, "cuda.json").References[0]
	if err := r.Validate(nil); err != nil {
		t.Fatalf("valid reference: %v", err)
	}
	r.Text = "<think>"
	r.Codes = r.Codes.Clone()
	r.Codes[3][2] = 1024
	err := r.Validate(nil)
	if !errors.Is(err, ErrTranscript) || !errors.Is(err, ErrCodeRange) {
		t.Fatalf("err = %v, want ErrTranscript and ErrCodeRange", err)
	}
	if fields := problemFields(err); !contains(fields, "text") || !contains(fields, "codes") {
		t.Errorf("fields %q, want text and codes", fields)
	}
	if err := (Reference{Text: "x", Codes: Codes{{1}}}).Validate(nil); !errors.Is(err, ErrShape) {
		t.Errorf("one codebook: err = %v, want ErrShape", err)
	}
}
