package hub

import (
	"testing"
	"time"
)

func TestPaceCallsStragglers(t *testing.T) {
	j := &job{chunk: 1 << 20, n: 8, t: Target{}}
	j.t.File.Size = 8 << 20
	now := time.Unix(1000, 0)
	var p pace
	s := newSpan(task{j, 0}, now)
	if got := p.after(s, 3*time.Second); got != 3*time.Second {
		t.Errorf("no samples: want the limit, got %v", got)
	}
	for i := range 4 {
		done := newSpan(task{j, i}, now)
		p.record(done, now.Add(40*time.Millisecond)) // 1 MiB in 40 ms
	}
	if got := p.after(s, 3*time.Second); got != 100*time.Millisecond {
		t.Errorf("2 x 40 ms is under the floor: want 100ms, got %v", got)
	}
	for i := range 20 {
		done := newSpan(task{j, i % 8}, now)
		p.record(done, now.Add(time.Second)) // slower link: 1 MiB/s
	}
	if got := p.after(s, 3*time.Second); got < time.Second || got > 3*time.Second {
		t.Errorf("at about 1 s per MiB: want 1 to 3 s, got %v", got)
	}
	// A split span teaches nothing about the link.
	before := p.nsPerByte
	sp := newSpan(task{j, 1}, now)
	if sp.split(now.Add(time.Hour), 0, 1) == nil {
		t.Fatal("split refused")
	}
	p.record(sp, now.Add(time.Hour))
	if p.nsPerByte != before {
		t.Error("a split span changed the pace")
	}
}

func TestSplitKeepsRangesDisjoint(t *testing.T) {
	j := &job{chunk: 1 << 20, n: 1}
	j.t.File.Size = 1 << 20
	now := time.Unix(0, 0)
	s := newSpan(task{j, 0}, now)
	if s.split(now, time.Second, 1024) != nil {
		t.Error("split before its time")
	}
	ns := s.split(now.Add(time.Second), time.Second, 1024)
	if ns == nil {
		t.Fatal("no split")
	}
	a0, a1 := s.bounds()
	b0, b1 := ns.bounds()
	if a0 != 0 || a1+1 != b0 || b1 != 1<<20-1 || s.parts.Load() != 2 {
		t.Errorf("ranges %d-%d and %d-%d, parts %d", a0, a1, b0, b1, s.parts.Load())
	}
	if s.split(now.Add(time.Second), 0, 1<<20) != nil {
		t.Error("split below twice the minimum")
	}
}
