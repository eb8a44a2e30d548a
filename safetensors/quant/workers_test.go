package quant

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/safetensors"
)

// TestWorkersBoundConversionsInFlight counts the conversions running at
// once over a four-shard checkpoint: never more than Workers, whatever the
// number of shards written at the same time.
func TestWorkersBoundConversionsInFlight(t *testing.T) {
	in := t.TempDir()
	ck := SyntheticCheckpoint{Layers: 4, Experts: 8, Hidden: 256, Inter: 128, Shards: 4}
	if err := ck.Write(in); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3} {
		c, err := safetensors.OpenCheckpoint(in)
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{Target: ToNVFP4, Workers: workers}
		if err := opts.normalize(); err != nil {
			t.Fatal(err)
		}
		p, err := plan(c, &opts)
		if err != nil {
			t.Fatal(err)
		}
		var now, peak, runs atomic.Int32
		var mu sync.Mutex
		wrapped := map[*job]bool{}
		for _, s := range p.shards {
			for _, j := range s.jobOf {
				mu.Lock()
				if !wrapped[j] {
					wrapped[j] = true
					run := j.run
					j.run = func() (map[string][]byte, error) {
						n := now.Add(1)
						for {
							if old := peak.Load(); n <= old || peak.CompareAndSwap(old, n) {
								break
							}
						}
						runs.Add(1)
						defer now.Add(-1)
						// Yield so that other workers, if allowed, start
						// their own conversions meanwhile.
						for range 50 {
							runtime.Gosched()
						}
						return run()
					}
				}
				mu.Unlock()
			}
		}
		out := t.TempDir()
		if err := p.write(context.Background(), out, &opts); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if int(runs.Load()) != len(wrapped) {
			t.Errorf("workers=%d: %d of %d jobs ran", workers, runs.Load(), len(wrapped))
		}
		if got := int(peak.Load()); got > workers {
			t.Errorf("workers=%d: %d conversions were in flight at once over %d shards", workers, got, len(p.shards))
		}
		t.Logf("workers=%d: at most %d conversions at once, %d jobs, %d shards", workers, peak.Load(), runs.Load(), len(p.shards))
	}
}

// TestQuantizeSameForAnyWorkers converts one four-shard checkpoint with 1,
// 2, 5, 7 and 32 workers: every output file is the same, byte for byte.
func TestQuantizeSameForAnyWorkers(t *testing.T) {
	in := t.TempDir()
	ck := SyntheticCheckpoint{Layers: 4, Experts: 6, Hidden: 256, Inter: 128, Shards: 4}
	if err := ck.Write(in); err != nil {
		t.Fatal(err)
	}
	var first map[string][32]byte
	for _, workers := range []int{1, 2, 5, 7, 32} {
		out := filepath.Join(t.TempDir(), "out")
		if _, err := Quantize(context.Background(), in, out, Options{Target: ToNVFP4, Workers: workers}); err != nil {
			t.Fatal(err)
		}
		sums := dirSums(t, out)
		if first == nil {
			first = sums
			if len(first) < 4 {
				t.Fatalf("output holds %d files", len(first))
			}
		} else if !reflect.DeepEqual(first, sums) {
			t.Errorf("output with %d workers differs from the one with 1", workers)
		}
		os.RemoveAll(out)
	}
}

// TestInFlightFitsMemory plans experts of the backbone's shape (512 x 2048
// block FP8): any --workers gives at most as many jobs in flight as
// jobMemory holds, and a small --workers is taken as it is.
func TestInFlightFitsMemory(t *testing.T) {
	in := t.TempDir()
	if err := (SyntheticCheckpoint{Layers: 1, Experts: 4, Hidden: 2048, Inter: 512, Shards: 1}).Write(in); err != nil {
		t.Fatal(err)
	}
	c, err := safetensors.OpenCheckpoint(in)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := Options{Target: ToNVFP4}
	opts.normalize()
	p, err := plan(c, &opts)
	if err != nil {
		t.Fatal(err)
	}
	var largest int64
	for _, j := range p.shards[0].jobOf {
		largest = max(largest, j.bytes)
	}
	// gate and up: 2 x (1 MiB FP8 + 64 B scales) in, 2 x (512 KiB + 64 KiB) out
	if largest < 3<<20 || largest > 4<<20 {
		t.Errorf("largest job holds %d bytes; want about 3.2 MiB", largest)
	}
	for _, w := range []int{1, 3, 16} {
		if got := p.inFlight(w); got != w {
			t.Errorf("inFlight(%d) = %d", w, got)
		}
	}
	for _, w := range []int{64, 1000} {
		got := p.inFlight(w)
		if int64(got)*largest > jobMemory || got < 16 {
			t.Errorf("inFlight(%d) = %d jobs of %d bytes; want at least 16 and at most %d bytes", w, got, largest, jobMemory)
		}
	}
}

// TestShardSyncDoesNotHoldWorkers plays a disk that is slow to sync: the
// first two shards, once filled, wait in their sync until a conversion of
// the third shard has started. The workers must go on with the third
// shard meanwhile; a writer that keeps a shard's place until its sync ends
// never starts it (the wait gives up after 20 s and the test fails).
func TestShardSyncDoesNotHoldWorkers(t *testing.T) {
	in := t.TempDir()
	if err := (SyntheticCheckpoint{Layers: 4, Experts: 4, Hidden: 256, Inter: 128, Shards: 4}).Write(in); err != nil {
		t.Fatal(err)
	}
	c, err := safetensors.OpenCheckpoint(in)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := Options{Target: ToNVFP4, Workers: 2}
	if err := opts.normalize(); err != nil {
		t.Fatal(err)
	}
	p, err := plan(c, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.shards) != 4 {
		t.Fatalf("%d shards, want 4", len(p.shards))
	}
	third := make(chan struct{})
	var once sync.Once
	for _, j := range p.shards[2].jobOf {
		run := j.run
		j.run = func() (map[string][]byte, error) {
			once.Do(func() { close(third) })
			return run()
		}
	}
	var late atomic.Int32
	orig := shardFilled
	shardFilled = func(name string) {
		if name != p.shards[0].name && name != p.shards[1].name {
			return
		}
		select {
		case <-third:
		case <-time.After(20 * time.Second):
			late.Add(1)
		}
	}
	t.Cleanup(func() { shardFilled = orig })
	if err := p.write(context.Background(), t.TempDir(), &opts); err != nil {
		t.Fatal(err)
	}
	if late.Load() > 0 {
		t.Errorf("the third shard's conversions waited for the syncs of the first two")
	}
}
