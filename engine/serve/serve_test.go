package serve

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/supervise"
)

func TestStaleUploadsRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	old, oldCheck, fresh := filepath.Join(dir, "clone-old"), filepath.Join(dir, "check-old"), filepath.Join(dir, "clone-new")
	for _, d := range []string{old, oldCheck, fresh} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "clip-1"), []byte("x"), 0o600)
	}
	past := time.Now().Add(-2 * staleUpload)
	os.Chtimes(old, past, past)
	os.Chtimes(oldCheck, past, past)
	removeStaleUploads(dir, slog.New(slog.DiscardHandler))
	for _, d := range []string{old, oldCheck} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("a leftover upload of a killed server is still there: %s %v", filepath.Base(d), err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("an upload in progress was removed: %v", err)
	}
}

func TestSupervisorKeepAlive(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{-1: 0, 0: supervise.UnloadAtOnce, time.Minute: time.Minute} {
		if got := supervisorKeepAlive(d); got != want {
			t.Errorf("supervisorKeepAlive(%v) = %v, want %v", d, got, want)
		}
	}
}
