package hub

import (
	"testing"
	"time"
)

// TestDownloaderResolvesDefaultsOnce: zero options take the defaults, set
// ones are kept, and a negative SplitMin turns splitting off.
func TestDownloaderResolvesDefaultsOnce(t *testing.T) {
	d := newDownloader(nil, "o/r", "c", DownloadOptions{})
	if d.workers != DefaultWorkers || d.chunkSize != DefaultChunkSize || d.idle != DefaultIdleTimeout ||
		d.attempts != DefaultMaxAttempts || d.splitAfter != DefaultSplitAfter || d.splitMin != DefaultSplitMin {
		t.Errorf("zero options: %+v", d)
	}
	d = newDownloader(nil, "o/r", "c", DownloadOptions{Workers: 3, ChunkSize: 1 << 20, IdleTimeout: time.Second,
		MaxAttempts: 2, SplitAfter: time.Minute, SplitMin: 4 << 10})
	if d.workers != 3 || d.chunkSize != 1<<20 || d.idle != time.Second || d.attempts != 2 || d.splitAfter != time.Minute || d.splitMin != 4<<10 {
		t.Errorf("set options: %+v", d)
	}
	if d = newDownloader(nil, "o/r", "c", DownloadOptions{SplitMin: -1}); d.splitMin != 0 {
		t.Errorf("SplitMin -1: splitMin %d, want 0 (off)", d.splitMin)
	}
}
