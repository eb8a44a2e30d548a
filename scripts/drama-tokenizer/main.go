// Command drama-tokenizer writes a tokenizer.json laid out as Drama 3's
// (the Qwen3 tokenizer with Fish Audio's added tokens) into DIR, which it
// makes, for trying drama tokenize and drama serve without the checkpoint.
//
//	go run ./scripts/drama-tokenizer DIR                  # Qwen3's whole vocabulary (11 MB)
//	go run ./scripts/drama-tokenizer -small 2000 DIR      # its first 2000 merges (small-tokenizer.json)
//
// With -small N it keeps the 256 byte tokens and Qwen3's first N merges,
// numbered from 0, then the same added tokens right after them.
// small-tokenizer.json beside this file is its output for -small 2000 (the
// demo root's); TestSmallTokenizerIsTheScripts holds the two equal. More:
// docs/tokenizer.md ("Without the checkpoint").
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/engine/prompt/prompttest"
)

// SmallMerges is the number of merges of small-tokenizer.json.
const SmallMerges = 2000

func main() {
	small := flag.Int("small", 0, "keep only the first N merges of Qwen3's (0: the whole vocabulary)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: drama-tokenizer [-small N] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *small < 0 {
		flag.Usage()
		os.Exit(2)
	}
	path, err := write(flag.Arg(0), *small)
	if err != nil {
		fmt.Fprintln(os.Stderr, "drama-tokenizer:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

// write writes the tokenizer.json into dir, made when missing, and returns
// its path.
func write(dir string, small int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if small == 0 {
		return prompttest.WriteDrama(dir)
	}
	b, err := Small(small)
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, "tokenizer.json")
	return name, os.WriteFile(name, b, 0o644)
}

// bpeModel is the model of a tokenizer.json, byte-level BPE, with every
// field it has so that it is written back whole.
type bpeModel struct {
	Type                    string         `json:"type"`
	Dropout                 any            `json:"dropout"`
	UnkToken                any            `json:"unk_token"`
	ContinuingSubwordPrefix any            `json:"continuing_subword_prefix"`
	EndOfWordSuffix         any            `json:"end_of_word_suffix"`
	FuseUnk                 bool           `json:"fuse_unk"`
	ByteFallback            bool           `json:"byte_fallback"`
	IgnoreMerges            bool           `json:"ignore_merges"`
	Vocab                   map[string]int `json:"vocab"`
	Merges                  [][2]string    `json:"merges"`
}

// Small returns the Drama-layout tokenizer.json cut to Qwen3's first n
// merges, as described in the package comment.
func Small(n int) ([]byte, error) {
	src, err := prompttest.DramaJSON()
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	var model bpeModel
	if err := json.Unmarshal(doc["model"], &model); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if err := model.cut(n); err != nil {
		return nil, err
	}
	if doc["model"], err = json.Marshal(model); err != nil {
		return nil, err
	}
	// The added tokens follow the vocabulary, in their order.
	var added []map[string]any
	if err := json.Unmarshal(doc["added_tokens"], &added); err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	for i := range added {
		added[i]["id"] = len(model.Vocab) + i
	}
	if doc["added_tokens"], err = json.Marshal(added); err != nil {
		return nil, err
	}
	return layout(doc, added)
}

// cut keeps the model's 256 byte tokens and its first n merges, the
// tokens they make numbered from 256 in the merges' order.
func (model *bpeModel) cut(n int) error {
	if n > len(model.Merges) {
		return fmt.Errorf("-small %d: Qwen3 has %d merges", n, len(model.Merges))
	}
	// The 256 byte tokens are Qwen3's tokens of one character, ids 0-255.
	vocab := map[string]int{}
	for tok, id := range model.Vocab {
		if id < 256 {
			vocab[tok] = id
		}
	}
	if len(vocab) != 256 {
		return fmt.Errorf("model.vocab: %d tokens below id 256, want the 256 byte tokens", len(vocab))
	}
	merges := model.Merges[:n]
	for i, m := range merges {
		for _, part := range m {
			if _, ok := vocab[part]; !ok {
				return fmt.Errorf("model.merges[%d]: %q is no token of the merges before it", i, part)
			}
		}
		tok := m[0] + m[1]
		if _, ok := vocab[tok]; !ok {
			vocab[tok] = len(vocab)
		}
	}
	model.Vocab, model.Merges = vocab, merges
	return nil
}

// layout writes the tokenizer.json doc with its keys in tokenizer.json's
// order and one added token per line, which keeps the file readable and
// its diffs small.
func layout(doc map[string]json.RawMessage, added []map[string]any) ([]byte, error) {
	var b strings.Builder
	b.WriteString("{\n")
	keys := []string{"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder", "model"}
	for i, k := range keys {
		v, ok := doc[k]
		if !ok {
			return nil, fmt.Errorf("tokenizer.json: no %q", k)
		}
		fmt.Fprintf(&b, "  %q: ", k)
		if k == "added_tokens" {
			b.WriteString("[\n")
			for j, a := range added {
				line, err := json.Marshal(a)
				if err != nil {
					return nil, err
				}
				b.WriteString("    ")
				b.Write(line)
				if j < len(added)-1 {
					b.WriteString(",")
				}
				b.WriteString("\n")
			}
			b.WriteString("  ]")
		} else {
			b.Write(v)
		}
		if i < len(keys)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return []byte(b.String()), nil
}
