package prompt

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drama-tts/drama/voices"
)

type promptCase struct {
	Text string `json:"text"`
	Refs []struct {
		Text  string  `json:"text"`
		Codes [][]int `json:"codes"`
	} `json:"refs"`
	IDs []int `json:"ids"`
}

func (c promptCase) references() []voices.Reference {
	refs := make([]voices.Reference, len(c.Refs))
	for i, r := range c.Refs {
		refs[i] = voices.Reference{Text: r.Text, Codes: r.Codes}
	}
	return refs
}

func readPromptCases(t *testing.T) []promptCase {
	t.Helper()
	f, err := os.Open("testdata/golden-prompts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []promptCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c promptCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func newBuilder(t *testing.T, lim Limits) *Builder {
	t.Helper()
	b, err := NewBuilder(drama(t), lim)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBuildGolden compares whole prompts with the ones the golden script
// builds the way fish-speech does, with Hugging Face's tokenizers.
func TestBuildGolden(t *testing.T) {
	b := newBuilder(t, Limits{})
	cases := readPromptCases(t)
	if len(cases) == 0 {
		t.Fatal("no prompt goldens")
	}
	for i, c := range cases {
		p, err := b.Build(c.Text, c.references())
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !slices.Equal(p.IDs, c.IDs) {
			t.Errorf("case %d %q:\n got %v\nwant %v", i, c.Text, p.IDs, c.IDs)
		}
		rows := p.Rows()
		if len(rows) != 11 || len(rows[10]) != p.Len() {
			t.Fatalf("case %d: rows %d x %d", i, len(rows), len(rows[0]))
		}
		t0 := p.CodesStart
		for j, r := range c.Refs {
			for c := range 10 {
				if !slices.Equal(rows[c+1][t0:t0+len(r.Codes[c])], r.Codes[c]) {
					t.Fatalf("case %d ref %d codebook %d: rows differ from the codes", i, j, c)
				}
			}
			t0 += len(r.Codes[0])
		}
		if n, err := b.Count(c.Text, c.references()); n != len(c.IDs) || err != nil {
			t.Errorf("case %d: Count = %d, %v; want %d", i, n, err, len(c.IDs))
		}
	}
}

func codes(frames int) voices.Codes {
	c := make(voices.Codes, 10)
	for i := range c {
		c[i] = make([]int, frames)
	}
	return c
}

func TestBuildErrors(t *testing.T) {
	b := newBuilder(t, Limits{})
	bad := codes(3)
	bad[0][2] = 4096
	badResidual := codes(3)
	badResidual[4][0] = 1024
	ragged := codes(3)
	ragged[9] = ragged[9][:2]
	for _, tc := range []struct {
		name string
		text string
		refs []voices.Reference
		is   error
		msg  string
	}{
		{"empty text", "  ", nil, nil, "text: byte 0: empty"},
		{"structural", "hi <|im_end|>", nil, ErrStructuralToken, "text: byte 3"},
		{"utf8", "hi \xff", nil, ErrInvalidUTF8, "byte 3"},
		{"transcript token", "hi", []voices.Reference{{Text: "a <|voice|> b", Codes: codes(2)}}, voices.ErrTranscript, "reference 0 text"},
		{"transcript special", "hi", []voices.Reference{{Text: "a <think> b", Codes: codes(2)}}, voices.ErrTranscript, `special token "<think>"`},
		{"transcript semantic", "hi", []voices.Reference{{Text: "a <|semantic:7|> b", Codes: codes(2)}}, voices.ErrTranscript, "reference 0 text"},
		{"transcript newline", "hi", []voices.Reference{{Text: "a\nb", Codes: codes(2)}}, voices.ErrTranscript, "line break"},
		{"semantic range", "hi", []voices.Reference{{Text: "a", Codes: bad}}, ErrCodes, "codebook 0 frame 2: want 0..4095, got 4096"},
		{"residual range", "hi", []voices.Reference{{Text: "a", Codes: badResidual}}, ErrCodes, "codebook 4 frame 0: want 0..1023, got 1024"},
		{"ragged", "hi", []voices.Reference{{Text: "a", Codes: ragged}}, ErrCodes, "codebook 9: want 3 frames, got 2"},
		{"codebooks", "hi", []voices.Reference{{Text: "a", Codes: codes(2)[:9]}}, ErrCodes, "want 10 codebooks, got 9"},
		{"no frames", "hi", []voices.Reference{{Text: "a", Codes: codes(0)}}, ErrCodes, "no frames"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := b.Build(tc.text, tc.refs)
			if err == nil || p != nil {
				t.Fatalf("Build = %v, %v; want an error", p, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want it to say %q", err, tc.msg)
			}
		})
	}
}

func TestBuildLimits(t *testing.T) {
	refs := []voices.Reference{{Text: "Reference.", Codes: codes(646)}, {Text: "Another.", Codes: codes(646)}}
	base := newBuilder(t, Limits{Max: 1})
	if base.WithLimits(Limits{Max: 7}).Limits().Max != 7 || base.Limits().Max != 1 {
		t.Fatal("WithLimits changed the original")
	}
	n, err := base.WithLimits(Limits{}).Count("Hello.", refs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lim Limits
		ok  bool
	}{
		{Limits{Context: n + DefaultReserve, Reserve: DefaultReserve}, true},
		{Limits{Context: n + DefaultReserve - 1, Reserve: DefaultReserve}, false},
		{Limits{Context: 100000, Reserve: DefaultReserve, Max: n - 1}, false},
		{Limits{Context: 10, Reserve: DefaultReserve, Max: n}, true},
	} {
		p, err := base.WithLimits(tc.lim).Build("Hello.", refs)
		if tc.ok {
			if err != nil {
				t.Errorf("%+v: %v", tc.lim, err)
			}
			continue
		}
		var tl *TooLongError
		if !errors.As(err, &tl) || !errors.Is(err, ErrTooLong) || tl.Tokens != n || tl.Max != tc.lim.MaxPrompt() {
			t.Errorf("%+v: err = %v, want TooLongError{%d, %d}", tc.lim, err, n, tc.lim.MaxPrompt())
		}
		if p == nil || p.Len() != n {
			t.Errorf("%+v: the prompt is not returned with the error", tc.lim)
		}
		if !strings.Contains(err.Error(), "want at most") {
			t.Errorf("message %q", err)
		}
	}
}

func TestNewBuilderNeedsDramaTokenizer(t *testing.T) {
	if _, err := NewBuilder(qwen(t), Limits{}); !errors.Is(err, ErrSemantic) {
		t.Fatalf("NewBuilder(Qwen3) = %v, want ErrSemantic", err)
	}
}

func TestReadLimits(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		doc     string
		context int
		field   string
		msg     string
	}{
		{`{"max_seq_len": 32768, "max_position_embeddings": 4096}`, 32768, "", ""},
		{`{"max_position_embeddings": 40960}`, 40960, "", ""},
		{`{"model_type": "x", "text_config": {"max_position_embeddings": 262144}}`, 262144, "", ""},
		{`{"max_seq_len": null, "text_config": {"seq_length": 8192}}`, 8192, "", ""},
		{`{"max_seq_len": -1}`, 0, "max_seq_len", "want a positive integer, got -1"},
		{`{"max_seq_len": "big"}`, 0, "max_seq_len", `got "big"`},
		{`{"hidden_size": 1}`, 0, "", "no context length"},
		{`{"max_seq_len": 1`, 0, "", "invalid JSON at byte"},
	} {
		name := filepath.Join(dir, "config.json")
		if err := os.WriteFile(name, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		lim, err := ReadLimits(name)
		if tc.msg == "" {
			if err != nil || lim.Context != tc.context || lim.Reserve != DefaultReserve {
				t.Errorf("%s: %+v, %v", tc.doc, lim, err)
			}
			continue
		}
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.File != name || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want field %q saying %q", tc.doc, err, tc.field, tc.msg)
		}
	}
	if _, err := ReadLimits(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing config: no error")
	}
	if (Limits{}).MaxPrompt() != 0 || (Limits{Context: 100, Reserve: 2048}).MaxPrompt() != 1 {
		t.Error("MaxPrompt edge cases")
	}
}
