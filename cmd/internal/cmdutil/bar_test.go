package cmdutil

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A bar's rate reads "MiB/s", counts only the bytes this run moved, and
// stays as it was once the bar is finished.
func TestBarRateCountsThisRunAndFreezes(t *testing.T) {
	var buf bytes.Buffer
	bar := NewBar(&buf, "model.safetensors", 100<<20, true)
	// it finished 50 s ago: a row that did not keep its figures would count
	// the whole minute since it started
	start := time.Now().Add(-time.Minute)
	bar.Set(barStart, start)
	SkipBar(bar, 50<<20) // resumed: on disk before this run
	bar.Add64(10 << 20)  // moved by this run, over 10 s
	bar.Set(barFinished, start.Add(10*time.Second))
	first := bar.String()
	if !strings.Contains(first, " 1.0 MiB/s ") {
		t.Fatalf("bar %q: want 1.0 MiB/s (10 MiB in 10 s; the 50 MiB resumed are not this run's)", first)
	}
	if strings.Contains(first, "p/s") {
		t.Fatalf("bar %q: the rate is MiB/s", first)
	}
	if !strings.Contains(first, "in 10s") {
		t.Fatalf("bar %q: a finished bar says how long it took", first)
	}
	bar.Finish()
	if again := bar.String(); again != first {
		t.Fatalf("a finished row changed:\n%q\n%q", first, again)
	}
}

func TestBarBeforeAnyByteHasNoRate(t *testing.T) {
	bar := NewBar(&bytes.Buffer{}, "x", 10, true)
	if s := bar.String(); !strings.Contains(s, "-- MiB/s") || strings.Contains(s, "p/s") {
		t.Fatalf("bar %q", s)
	}
}

func TestLineProgressRateLeavesOutSkippedBytes(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	p := newLineProgress(&buf, "fetch", 100<<20, func() time.Time { return now })
	p.Skip(50 << 20)
	now = now.Add(10 * time.Second)
	p.Add(10 << 20)
	p.Finish()
	if got := buf.String(); !strings.HasSuffix(got, "fetch: 60.0 MiB of 100.0 MiB (60.0%) 1.0 MiB/s\n") {
		t.Fatalf("%q", got)
	}
}
