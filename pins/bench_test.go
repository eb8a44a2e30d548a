package pins

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkHashFile measures HashFile on a 256 MiB file in the page cache.
func BenchmarkHashFile(b *testing.B) {
	name := filepath.Join(b.TempDir(), "f")
	data := make([]byte, 256<<20)
	rand.Read(data)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := HashFile(context.Background(), name, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifySize17 measures a size-level verify of a 17-file
// directory with a verified-state record, in process.
func BenchmarkVerifySize17(b *testing.B) {
	dir := b.TempDir()
	for i := range 17 {
		os.WriteFile(filepath.Join(dir, string(rune('a'+i))), []byte{byte(i)}, 0o644)
	}
	p, err := Make(context.Background(), dir, Pins{Variant: "full"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := Verify(ctx, dir, p, VerifyOptions{Level: LevelSHA256}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Verify(ctx, dir, p, VerifyOptions{Level: LevelSize}); err != nil {
			b.Fatal(err)
		}
	}
}
