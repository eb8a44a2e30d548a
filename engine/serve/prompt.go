package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/drama-tts/drama/engine/prompt"
)

// promptBuilder loads the variant's tokenizer.json and the model's context
// from its config.json, so drama serve refuses a prompt the model cannot
// take. maxTokens > 0 overrides the limit. Without a tokenizer it returns
// nil and the check is skipped (with a warning).
func promptBuilder(modelDir string, maxTokens int, log *slog.Logger) (*prompt.Builder, error) {
	tok, err := prompt.Open(filepath.Join(modelDir, "tokenizer.json"))
	if errors.Is(err, fs.ErrNotExist) {
		log.Warn("no tokenizer.json in the model directory: prompt lengths are not checked before the engine", "dir", modelDir)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the variant's tokenizer: %w", err)
	}
	lim, err := prompt.ReadLimits(filepath.Join(modelDir, "config.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the variant's config: %w", err)
	}
	if maxTokens > 0 {
		lim.Max = maxTokens
	}
	return prompt.NewBuilder(tok, lim)
}
