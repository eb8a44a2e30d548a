package pins

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

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

// BenchmarkSHA256Memory measures crypto/sha256 over a 1 MiB buffer that
// stays in the core's cache, with one goroutine per -cpu: the hashing
// rate with no file and no memory traffic, so `-cpu 1,N` shows how far N
// cores at once fall short of N x one core on a host (frequency and
// shared execution units, not reads). scripts/bench-sha-cores.sh runs it.
func BenchmarkSHA256Memory(b *testing.B) {
	buf := make([]byte, 1<<20)
	rand.Read(buf)
	b.SetBytes(int64(len(buf)))
	b.RunParallel(func(pb *testing.PB) {
		h := sha256.New()
		for pb.Next() {
			h.Reset()
			h.Write(buf)
			h.Sum(nil)
		}
	})
}
