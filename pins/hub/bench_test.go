package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFetch downloads one 64 MiB LFS file from the mirror on loopback
// with parallel ranged chunks, hashing and the verified rename included,
// and reports the worst time from last byte to verified.
func BenchmarkFetch(b *testing.B) {
	for _, workers := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			fx := newFixture(b)
			data := content(21, 64<<20)
			pf := fx.addRepo(repoA, commitA, map[string][]byte{"w.safetensors": data})
			b.SetBytes(int64(len(data)))
			var worst time.Duration
			for b.Loop() {
				cache := filepath.Join(fx.dir, "cache")
				f := fx.fetcher(cache)
				f.Download.Workers, f.Download.ChunkSize = workers, 4<<20
				f.Download.Event = func(e Event) {
					if e.Kind == EventVerified && e.VerifyLag > worst {
						worst = e.VerifyLag
					}
				}
				if _, err := f.Fetch(b.Context(), repoA, commitA, pf); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(cache)
				b.StartTimer()
			}
			b.ReportMetric(float64(worst.Milliseconds()), "max-verify-lag-ms")
		})
	}
}
