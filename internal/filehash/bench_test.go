package filehash

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSHA256 measures SHA256 on a 256 MiB file in the page cache.
func BenchmarkSHA256(b *testing.B) {
	name := filepath.Join(b.TempDir(), "f")
	data := make([]byte, 256<<20)
	rand.Read(data)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := SHA256(context.Background(), name, nil); err != nil {
			b.Fatal(err)
		}
	}
}
