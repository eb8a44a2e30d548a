package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/pool"
	"github.com/drama-tts/drama/engine/pool/pooltest"
)

// TestRTFCountsEngineTimeOnly: a request that waited 5 s in the queue for
// 1 s of audio made quickly has a real-time factor near 0, not 5.
func TestRTFCountsEngineTimeOnly(t *testing.T) {
	s := New(pooltest.New(t, pool.Options{}, pooltest.NewMember(enginetest.NewFake())), Config{})
	now := time.Now()
	obs := &observer{s: s, start: now.Add(-5 * time.Second), turn: now}
	obs.chunk(2 * engine.SampleRate) // 1 s of s16le
	obs.done(engine.Final{})
	var b strings.Builder
	s.metrics.mu.Lock()
	s.metrics.rtf.write(&b, "rtf", "")
	s.metrics.mu.Unlock()
	if !strings.Contains(b.String(), `rtf_bucket{le="0.25"} 1`) {
		t.Fatalf("real-time factor of a quick synthesis after a long wait:\n%s", b.String())
	}
}

// TestRetryAfterFromDrainRate: Retry-After is the places ahead times the
// measured time the engine's slot is held, not the time requests spent
// queued.
func TestRetryAfterFromDrainRate(t *testing.T) {
	s := New(pooltest.New(t, pool.Options{MaxQueue: 4}, pooltest.NewMember(enginetest.NewFake())), Config{})
	for range 8 {
		s.metrics.observeQueueWait(5 * time.Second) // long waits...
		s.metrics.hold.add(300 * time.Millisecond)
	}
	if got := s.retryAfter(); got != time.Second {
		t.Fatalf("Retry-After with an empty queue draining every 0.3 s: %v, want 1 s", got)
	}
	s.metrics.hold = &movingMean{none: time.Second}
	for range 8 {
		s.metrics.hold.add(3 * time.Second)
	}
	if got := s.retryAfter(); got != 3*time.Second {
		t.Fatalf("Retry-After with syntheses of 3 s: %v, want 3 s", got)
	}
}

// TestQueueWaitHistogram: every request that reaches the engine records its
// wait in drama_queue_wait_seconds.
func TestQueueWaitHistogram(t *testing.T) {
	ts, _, _, _ := startFake(t, nil)
	for range 3 {
		r := post(t, ts.URL, `{"input":"hello"}`)
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "drama_queue_wait_seconds_count 3\n") || !strings.Contains(string(b), "# TYPE drama_queue_wait_seconds histogram") {
		t.Fatalf("metrics:\n%s", b)
	}
}
