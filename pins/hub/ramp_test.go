package hub

import (
	"testing"
	"time"
)

// simulate runs a ramp from DefaultWorkers to max for ticks ticks on a host
// whose bytes per tick at each level come from rate (with the tick number
// for jitter), every allowed stream busy when busy says so, and returns
// the level in force during each tick.
func simulate(max, ticks int, rate func(level, tick int) float64, busy func(level int) bool) []int {
	r := newRamp(DefaultWorkers, max)
	levels := make([]int, ticks)
	lvl := r.level()
	for i := range ticks {
		levels[i] = lvl
		lvl = r.observe(int64(rate(lvl, i)), busy(lvl))
	}
	return levels
}

func always(int) bool { return true }

// share is the fraction of ticks spent at each level.
func share(levels []int) map[int]float64 {
	m := map[int]float64{}
	for _, l := range levels {
		m[l] += 1 / float64(len(levels))
	}
	return m
}

// Where more streams only cost (loopback: the bytes already arrive as fast
// as they can be written and hashed), a fetch with 32 workers runs at the
// default's 8 streams but for short trials, and tries less and less often.
func TestRampStaysWhereMoreStreamsCost(t *testing.T) {
	rate := func(level, tick int) float64 { // 8: 976 MB/s, 32: 767, as measured
		return map[int]float64{8: 976, 16: 870, 32: 767}[level] * 1e5
	}
	levels := simulate(32, 3000, rate, always) // 300 s of ticks
	sh := share(levels)
	if sh[8] < 0.95 || sh[32] > 0 {
		t.Errorf("share of ticks by level %v: want at least 95 %% at 8 and none at 32", sh)
	}
	trials := 0
	for i := 1; i < len(levels); i++ {
		if levels[i] == 16 && levels[i-1] == 8 {
			trials++
		}
	}
	if trials > 12 {
		t.Errorf("%d trials of 16 streams in 3000 ticks: want the wait between trials to grow", trials)
	}
}

// Jitter of a few per cent is not taken for a gain.
func TestRampIgnoresJitter(t *testing.T) {
	rate := func(level, tick int) float64 {
		j := []float64{1.04, 0.96, 1.0, 0.97, 1.03}[tick%5]
		return 500e5 * j
	}
	if sh := share(simulate(64, 2000, rate, always)); sh[8] < 0.95 {
		t.Errorf("share of ticks by level %v: want at least 95 %% at 8", sh)
	}
}

// Against a server that paces each connection, every doubling pays, and
// the ramp reaches the workers asked for within a few measurements.
func TestRampClimbsWhileStreamsPay(t *testing.T) {
	rate := func(level, tick int) float64 { return float64(level) * 20e5 }
	levels := simulate(64, 400, rate, always)
	first := -1
	for i, l := range levels {
		if l == 64 {
			first = i
			break
		}
	}
	// 8 -> 16 -> 32 -> 64: one baseline and two kept trials, each a
	// measurement of rampSettle+rampTicks ticks.
	if want := 3 * (rampSettle + rampTicks); first < 0 || first > want {
		t.Fatalf("reached 64 streams at tick %d: want by tick %d", first, want)
	}
	for i, l := range levels[first:] {
		if l != 64 {
			t.Fatalf("tick %d: back to %d streams though 64 paid", first+i, l)
		}
	}
}

// Where the gain stops at 16 streams, the ramp stays at 16.
func TestRampStopsAtTheKnee(t *testing.T) {
	rate := func(level, tick int) float64 { return float64(min(level, 16)) * 50e5 }
	if sh := share(simulate(32, 3000, rate, always)); sh[16] < 0.95 {
		t.Errorf("share of ticks by level %v: want at least 95 %% at 16", sh)
	}
}

// No trial while streams sit idle (the last chunks, or a hash window that
// holds them back): more of them would show nothing.
func TestRampWaitsForBusyStreams(t *testing.T) {
	rate := func(level, tick int) float64 { return float64(level) * 20e5 }
	idle := func(int) bool { return false }
	for i, l := range simulate(32, 500, rate, idle) {
		if l != DefaultWorkers {
			t.Fatalf("tick %d: %d streams with streams idle: want %d", i, l, DefaultWorkers)
		}
	}
}

// Up to DefaultWorkers, --workers is what runs: there is nothing to try.
func TestRampFixedAtOrBelowDefault(t *testing.T) {
	rate := func(level, tick int) float64 { return float64(level) * 20e5 }
	for _, max := range []int{1, 4, DefaultWorkers} {
		for i, l := range simulate(max, 200, rate, always) {
			if l != max {
				t.Fatalf("workers %d, tick %d: %d streams", max, i, l)
			}
		}
	}
}

// The queue of a 32-worker fetch lets 8 workers take chunks at first, and
// 16 once a tick's trial begins with every stream busy.
func TestQueueRampsFromDefaultWorkers(t *testing.T) {
	j := &job{chunk: 1 << 20, n: 64}
	j.t.File.Size = 64 << 20
	q := newQueue(32, 1, j.chunk)
	q.window = 64
	for i := range j.n {
		q.push(task{j, i})
	}
	if got := q.allowed(); got != DefaultWorkers {
		t.Fatalf("workers allowed at the start: %d, want %d", got, DefaultWorkers)
	}
	for w := range DefaultWorkers {
		if _, ok := q.take(w); !ok {
			t.Fatalf("worker %d got nothing", w)
		}
	}
	var n int
	for range rampSettle + rampTicks {
		q.moved.Add(100 << 20)
		n, _ = q.rampStep()
	}
	if n != 2*DefaultWorkers {
		t.Fatalf("workers allowed after a measurement with all busy: %d, want %d", n, 2*DefaultWorkers)
	}
	got := make(chan int, 1)
	go func() { q.take(2*DefaultWorkers - 1); got <- 1 }()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("worker 15 got no chunk once 16 were allowed")
	}
}
