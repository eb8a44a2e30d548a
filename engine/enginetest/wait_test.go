package enginetest

import (
	"testing"
	"time"
)

// Within reports a condition met after a few checks, and one never met
// once its limit has passed; it checks again after a pause each time.
func TestWithin(t *testing.T) {
	calls := 0
	if !Within(10*time.Second, func() bool { calls++; return calls == 3 }) || calls != 3 {
		t.Errorf("a condition met at the third check: %d checks", calls)
	}
	calls = 0
	start := time.Now()
	if Within(20*time.Millisecond, func() bool { calls++; return false }) {
		t.Error("a condition never met was reported met")
	}
	if time.Since(start) < 20*time.Millisecond || calls < 2 {
		t.Errorf("a condition never met: gave up after %s and %d checks, want at least the limit and two checks", time.Since(start), calls)
	}
}
