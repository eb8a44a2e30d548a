package serve

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/drama-tts/drama/engine/prompt/prompttest"
)

func TestPromptBuilderFromModelDir(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	if b, err := promptBuilder(dir, 0, log); b != nil || err != nil {
		t.Fatalf("no tokenizer: %v %v", b, err)
	}
	if _, err := prompttest.WriteDrama(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_position_embeddings": 4096}`), 0o644)
	b, err := promptBuilder(dir, 0, log)
	if err != nil || b.Limits().MaxPrompt() != 4096-2048 {
		t.Fatalf("%v %+v", err, b)
	}
	if b, _ := promptBuilder(dir, 100, log); b.Limits().MaxPrompt() != 100 {
		t.Fatalf("override: %+v", b.Limits())
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model": 3}`), 0o644)
	if _, err := promptBuilder(dir, 0, log); err == nil {
		t.Fatal("a broken tokenizer.json must be an error")
	}
}
