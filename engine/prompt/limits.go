package prompt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// DefaultReserve is the number of tokens a prompt leaves free for the reply
// when the caller does not say: fish-speech refuses prompts longer than
// max_seq_len - 2048.
const DefaultReserve = 2048

// Limits bound the length of a prompt.
type Limits struct {
	// Context is the number of positions the model attends to, from the
	// checkpoint's config.json; 0 means unknown (no limit).
	Context int
	// Reserve is the number of positions kept free for the reply.
	Reserve int
	// Max, when above 0, replaces Context-Reserve (a user's override).
	Max int
}

// MaxPrompt returns the most tokens a prompt may have, or 0 for no limit.
func (l Limits) MaxPrompt() int {
	switch {
	case l.Max > 0:
		return l.Max
	case l.Context > 0:
		return max(l.Context-l.Reserve, 1)
	}
	return 0
}

// Check returns a *TooLongError when a prompt of n tokens is over the limit.
func (l Limits) Check(n int) error {
	if m := l.MaxPrompt(); m > 0 && n > m {
		return &TooLongError{Tokens: n, Max: m}
	}
	return nil
}

// contextKeys are the config.json keys that give a model's context length,
// in the order they are tried, at the top level and then in text_config.
var contextKeys = []string{"max_seq_len", "max_position_embeddings", "seq_length", "n_positions"}

// ReadLimits reads the context length from a checkpoint's config.json and
// returns Limits with it and DefaultReserve.
func ReadLimits(name string) (Limits, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return Limits{}, fmt.Errorf("prompt: read model config: %w", err)
	}
	n, field, err := contextLength(data)
	if err != nil {
		return Limits{}, &FormatError{File: name, Field: field, Err: err}
	}
	return Limits{Context: n, Reserve: DefaultReserve}, nil
}

func contextLength(data []byte) (int, string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return 0, "", jsonError(data, err)
	}
	for _, scope := range []string{"", "text_config"} {
		m := doc
		if scope != "" {
			if err := json.Unmarshal(doc[scope], &m); err != nil || m == nil {
				continue
			}
		}
		for _, k := range contextKeys {
			raw, ok := m[k]
			if !ok || string(raw) == "null" {
				continue
			}
			field := k
			if scope != "" {
				field = scope + "." + k
			}
			var n int
			if err := json.Unmarshal(raw, &n); err != nil || n <= 0 {
				return 0, field, fmt.Errorf("want a positive integer, got %s", raw)
			}
			return n, field, nil
		}
	}
	return 0, "", errors.New("no context length (max_seq_len or max_position_embeddings, also under text_config): set the prompt limit by hand")
}
