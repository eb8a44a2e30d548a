package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/dlclark/regexp2"
	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/model/bpe"
)

// fileJSON is the part of tokenizer.json this package reads. Truncation,
// padding, post-processor and decoder do not change the ids of a text
// encoded without added special tokens, so they are not read.
type fileJSON struct {
	AddedTokens  []addedJSON     `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        modelJSON       `json:"model"`
}

type addedJSON struct {
	ID         *int    `json:"id"`
	Content    *string `json:"content"`
	SingleWord bool    `json:"single_word"`
	LStrip     bool    `json:"lstrip"`
	RStrip     bool    `json:"rstrip"`
	Normalized bool    `json:"normalized"`
	Special    bool    `json:"special"`
}

type modelJSON struct {
	Type                    string         `json:"type"`
	Dropout                 *float64       `json:"dropout"`
	ContinuingSubwordPrefix string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         string         `json:"end_of_word_suffix"`
	ByteFallback            bool           `json:"byte_fallback"`
	IgnoreMerges            bool           `json:"ignore_merges"`
	Vocab                   map[string]int `json:"vocab"`
	Merges                  []mergeJSON    `json:"merges"`
}

// mergeJSON is one merge, written either as "a b" or as ["a", "b"].
type mergeJSON struct {
	pair [2]string
	ok   bool
}

// UnmarshalJSON reads either form; a merge that is not two tokens is kept
// with ok false, for build to refuse.
func (m *mergeJSON) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		a, c, found := strings.Cut(s, " ")
		m.pair, m.ok = [2]string{a, c}, found && !strings.Contains(c, " ")
		return nil
	}
	var p []string
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if len(p) == 2 {
		m.pair, m.ok = [2]string{p[0], p[1]}, true
	}
	return nil
}

type preTokJSON struct {
	Type          string       `json:"type"`
	PreTokenizers []preTokJSON `json:"pretokenizers"`
	Pattern       *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

// Open reads the tokenizer.json file name.
func Open(name string) (*Tokenizer, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("prompt: open tokenizer: %w", err)
	}
	return parse(name, data)
}

func parse(name string, data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, &FormatError{File: name, Err: jsonError(data, err)}
	}
	t, field, err := build(&f)
	if err != nil {
		return nil, &FormatError{File: name, Field: field, Err: err}
	}
	t.name = name
	return t, nil
}

// jsonError adds the byte offset to a JSON syntax or type error.
func jsonError(data []byte, err error) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty file: want a JSON document")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %s: want %s, got JSON %s at byte %d", te.Field, te.Type, te.Value, te.Offset)
	}
	return err
}

// build assembles the tokenizer; on failure it names the field at fault.
func build(f *fileJSON) (t *Tokenizer, field string, err error) {
	m, field, err := buildModel(&f.Model)
	if err != nil {
		return nil, field, err
	}
	nfc, err := parseNormalizer(f.Normalizer)
	if err != nil {
		return nil, "normalizer", err
	}
	sp, field, err := parsePreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, field, err
	}
	added, field, err := parseAdded(f.AddedTokens, m)
	if err != nil {
		return nil, field, err
	}
	return newTokenizer(m, nfc, sp, added), "", nil
}

func buildModel(mj *modelJSON) (*bpeModel, string, error) {
	switch {
	case mj.Type != "BPE" && mj.Type != "":
		return nil, "model.type", fmt.Errorf("want BPE, got %q: %w", mj.Type, ErrUnsupported)
	case mj.Dropout != nil && *mj.Dropout != 0:
		return nil, "model.dropout", fmt.Errorf("want null, got %v: %w", *mj.Dropout, ErrUnsupported)
	case mj.ContinuingSubwordPrefix != "" || mj.EndOfWordSuffix != "":
		return nil, "model", fmt.Errorf("continuing_subword_prefix and end_of_word_suffix: %w", ErrUnsupported)
	case mj.ByteFallback:
		return nil, "model.byte_fallback", fmt.Errorf("want false, got true: %w", ErrUnsupported)
	case len(mj.Vocab) == 0:
		return nil, "model.vocab", errors.New("missing or empty")
	}
	merges := make([]string, len(mj.Merges))
	for i, mg := range mj.Merges {
		if field, err := checkMerge(mj.Vocab, i, mg); err != nil {
			return nil, field, err
		}
		merges[i] = mg.pair[0] + " " + mg.pair[1]
	}
	sm, err := bpe.New(mj.Vocab, merges, nil, nil, nil, nil)
	if err != nil {
		return nil, "model", err
	}
	m, err := newBPEModel(sm)
	if err != nil {
		return nil, "model.vocab", err
	}
	m.ignoreMerges = mj.IgnoreMerges
	return m, "", nil
}

func checkMerge(vocab map[string]int, i int, mg mergeJSON) (string, error) {
	field := fmt.Sprintf("model.merges[%d]", i)
	if !mg.ok {
		return field, errors.New(`want "a b" or ["a", "b"]`)
	}
	for _, p := range mg.pair {
		if _, ok := vocab[p]; !ok {
			return field, fmt.Errorf("%q is not in model.vocab", p)
		}
	}
	if _, ok := vocab[mg.pair[0]+mg.pair[1]]; !ok {
		return field, fmt.Errorf("merged token %q is not in model.vocab", mg.pair[0]+mg.pair[1])
	}
	return "", nil
}

// parseNormalizer accepts no normalizer or NFC; it reports whether NFC is on.
func parseNormalizer(raw json.RawMessage) (bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return false, nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return false, err
	}
	switch {
	case n.Type == "NFC":
		return true, nil
	case n.Type == "Sequence" && len(n.Normalizers) == 0:
		return false, nil
	case n.Type == "Sequence" && len(n.Normalizers) == 1:
		return parseNormalizer(n.Normalizers[0])
	}
	return false, fmt.Errorf("want null or NFC, got %q: %w", n.Type, ErrUnsupported)
}

// parsePreTokenizer accepts the two byte-level shapes in use: a Split on a
// pattern followed by ByteLevel without its own regex (Qwen), or ByteLevel
// with its GPT-2 regex.
func parsePreTokenizer(raw json.RawMessage) (*splitter, string, error) {
	const field = "pre_tokenizer"
	if len(raw) == 0 || string(raw) == "null" {
		return nil, field, fmt.Errorf("missing: want a byte-level pre-tokenizer: %w", ErrUnsupported)
	}
	var p preTokJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, field, err
	}
	steps := []preTokJSON{p}
	if p.Type == "Sequence" {
		steps = p.PreTokenizers
	}
	pattern, err := splitPattern(steps)
	if err != nil {
		return nil, field, err
	}
	sp, err := newSplitter(pattern)
	if err != nil {
		return nil, field + ".pattern", err
	}
	return sp, "", nil
}

func splitPattern(steps []preTokJSON) (string, error) {
	last := len(steps) - 1
	if last < 0 || last > 1 || steps[last].Type != "ByteLevel" {
		return "", fmt.Errorf("want [Split, ByteLevel] or ByteLevel: %w", ErrUnsupported)
	}
	bl := steps[last]
	if bl.AddPrefixSpace {
		return "", fmt.Errorf("ByteLevel.add_prefix_space true: %w", ErrUnsupported)
	}
	useRegex := bl.UseRegex == nil || *bl.UseRegex
	if last == 0 {
		if !useRegex {
			return "", fmt.Errorf("a ByteLevel without a regex and without a Split: %w", ErrUnsupported)
		}
		return gpt2Pattern, nil
	}
	if useRegex {
		return "", fmt.Errorf("a Split followed by ByteLevel.use_regex true: %w", ErrUnsupported)
	}
	return splitStep(steps[0])
}

func splitStep(s preTokJSON) (string, error) {
	switch {
	case s.Type != "Split":
		return "", fmt.Errorf("want Split, got %q: %w", s.Type, ErrUnsupported)
	case s.Behavior != "Isolated" || s.Invert:
		return "", fmt.Errorf("the Split's behavior %q and invert %v: want Isolated and false: %w", s.Behavior, s.Invert, ErrUnsupported)
	case s.Pattern == nil:
		return "", errors.New("the Split has no pattern")
	case s.Pattern.Regex != nil:
		return *s.Pattern.Regex, nil
	case s.Pattern.String != nil:
		return regexp2.Escape(*s.Pattern.String), nil
	}
	return "", errors.New(`the Split's pattern: want {"Regex": ...} or {"String": ...}`)
}

// parseAdded checks the added tokens: ids unique, content not empty, and a
// content already in the model's vocabulary keeping its id there.
func parseAdded(list []addedJSON, m *bpeModel) ([]*AddedToken, string, error) {
	out := make([]*AddedToken, 0, len(list))
	ids := make(map[int]bool, len(list))
	contents := make(map[string]bool, len(list))
	for i, a := range list {
		field := fmt.Sprintf("added_tokens[%d]", i)
		if a.ID == nil || a.Content == nil || *a.Content == "" {
			return nil, field, errors.New("want an id and a non-empty content")
		}
		id, c := *a.ID, *a.Content
		if vid, ok := (*m.Vocab)[c]; ok && vid != id {
			return nil, field, fmt.Errorf("%q: want id %d as in model.vocab, got %d", c, vid, id)
		}
		if v, ok := (*m.VocabR)[id]; ok && v != c {
			return nil, field, fmt.Errorf("id %d is %q in model.vocab, not %q", id, v, c)
		}
		if ids[id] || contents[c] || id < 0 {
			return nil, field, fmt.Errorf("id %d or content %q given twice or negative", id, c)
		}
		ids[id], contents[c] = true, true
		out = append(out, &AddedToken{ID: id, Content: c, Special: a.Special, SingleWord: a.SingleWord,
			LStrip: a.LStrip, RStrip: a.RStrip, Normalized: a.Normalized})
	}
	slices.SortFunc(out, func(a, b *AddedToken) int { return a.ID - b.ID })
	return out, "", nil
}

// pipeline returns sugarme's tokenizer over the drama model and
// pre-tokenizer, with NFC when the file asks for it. Added tokens are not
// given to it: the Tokenizer finds them itself before the pipeline runs.
func pipeline(m *bpeModel, nfc bool, sp *splitter) *tokenizer.Tokenizer {
	tk := tokenizer.NewTokenizer(m)
	if nfc {
		tk.WithNormalizer(nfcNormalizer{})
	}
	tk.WithPreTokenizer(sp)
	return tk
}
