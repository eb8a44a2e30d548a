// Package prompttest gives tests a real tokenizer.json: the Qwen3 tokenizer
// (Apache License 2.0, see LICENSE-qwen3-tokenizer), and the same tokenizer
// with Fish Audio's added tokens appended as Drama 3 lays them out, so that
// prompts with references can be built and counted without a checkpoint.
package prompttest

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

//go:embed qwen3-tokenizer.json.gz
var qwenGz []byte

// FishTokens are Fish Audio's added tokens that follow Qwen3's 26, from id
// FirstFishID on, in fish-speech's order; the 4096 semantic tokens
// <|semantic:0|> to <|semantic:4095|> follow them from FirstSemanticID.
var FishTokens = []string{"<|pad|>", "<|phoneme_start|>", "<|phoneme_end|>", "<|text|>", "<|voice|>",
	"<|interleave|>", "<|audio_start|>", "<|audio_end|>", "<|audio_pad|>"}

// Ids of the Drama layout.
const (
	FirstFishID     = 151669
	FirstSemanticID = 151678
	VoiceID         = 151673
	IMStartID       = 151644
	IMEndID         = 151645
)

var (
	once            sync.Once
	qwenDoc, drama  []byte
	errQwen, errDrm error
)

func load() {
	zr, err := gzip.NewReader(bytes.NewReader(qwenGz))
	if err != nil {
		errQwen = err
		return
	}
	if qwenDoc, errQwen = io.ReadAll(zr); errQwen != nil {
		return
	}
	drama, errDrm = withFishTokens(qwenDoc)
}

// QwenJSON returns the Qwen3 tokenizer.json (11,422,654 bytes). Callers must
// not change the slice.
func QwenJSON() ([]byte, error) {
	once.Do(load)
	return qwenDoc, errQwen
}

// DramaJSON returns the Qwen3 tokenizer.json with Fish Audio's added tokens
// appended. Callers must not change the slice.
func DramaJSON() ([]byte, error) {
	once.Do(load)
	if errQwen != nil {
		return nil, errQwen
	}
	return drama, errDrm
}

// WriteDrama writes DramaJSON to dir/tokenizer.json and returns its path.
func WriteDrama(dir string) (string, error) {
	b, err := DramaJSON()
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, "tokenizer.json")
	return name, os.WriteFile(name, b, 0o644)
}

func withFishTokens(base []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(base, &doc); err != nil {
		return nil, err
	}
	var added []map[string]any
	if err := json.Unmarshal(doc["added_tokens"], &added); err != nil {
		return nil, err
	}
	id := FirstFishID
	add := func(c string) {
		added = append(added, map[string]any{"id": id, "content": c, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
		id++
	}
	for _, c := range FishTokens {
		add(c)
	}
	for i := range 4096 {
		add(fmt.Sprintf("<|semantic:%d|>", i))
	}
	b, err := json.Marshal(added)
	if err != nil {
		return nil, err
	}
	doc["added_tokens"] = b
	return json.Marshal(doc)
}
