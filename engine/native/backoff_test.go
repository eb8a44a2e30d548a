package native_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/native"
)

// busyServer answers the first busy requests with 503 (all of them when busy
// is negative) and the rest with a short PCM stream, counting the requests.
func busyServer(t *testing.T, busy int64) (addr string, requests *atomic.Int64) {
	t.Helper()
	requests = new(atomic.Int64)
	addr = rawServer(t, func(int64) string {
		if n := requests.Add(1); busy < 0 || n <= busy {
			return "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
		}
		return streamHead + "4\r\n\x01\x00\x02\x00\r\n0\r\n\r\n"
	})
	return addr, requests
}

// fakeClock records the pauses of the busy retry and advances by them, so the
// schedule is counted, not timed.
type fakeClock struct {
	t      time.Time
	pauses []time.Duration
}

func (f *fakeClock) now() time.Time { return f.t }

func (f *fakeClock) sleep(_ context.Context, d time.Duration) error {
	f.pauses = append(f.pauses, d)
	f.t = f.t.Add(d)
	return nil
}

var pcmReq = &native.SpeechRequest{Input: "x", Stream: true, ResponseFormat: "pcm"}

// The first pauses after a 503 are a few milliseconds, doubling, so a
// request that meets the engine's short busy window right after another
// reply is not held for the full pause.
func TestBusyRetryBacksOffFromMilliseconds(t *testing.T) {
	addr, requests := busyServer(t, 3)
	c := native.NewClient(addr)
	clock := &fakeClock{t: time.Unix(0, 0)}
	native.SetBusyClock(c, clock.now, clock.sleep)
	_, res, err := collect(t, c, pcmReq)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond}
	if !slices.Equal(clock.pauses, want) {
		t.Errorf("pauses %v: want %v", clock.pauses, want)
	}
	if res.BusyRetries != 3 || requests.Load() != 4 {
		t.Errorf("%d retries in %d requests: want 3 in 4", res.BusyRetries, requests.Load())
	}
}

// A server that stays busy is retried with pauses that double up to 10 ms
// for the first half second, then every 50 ms (the native server's own
// advice), within the same 10 s bound as before, and then reported busy.
func TestBusyRetryScheduleWithinBound(t *testing.T) {
	addr, requests := busyServer(t, -1)
	c := native.NewClient(addr)
	clock := &fakeClock{t: time.Unix(0, 0)}
	native.SetBusyClock(c, clock.now, clock.sleep)
	_, err := c.Open(context.Background(), pcmReq)
	if !errors.Is(err, native.ErrBusy) {
		t.Fatalf("err %v: want ErrBusy", err)
	}
	var want []time.Duration
	var total time.Duration
	for d := native.BusyRetryFirst; ; {
		if total+d > native.DefaultBusyTimeout {
			break
		}
		want, total = append(want, d), total+d
		limit := native.DefaultBusyRetry
		if total >= native.BusyFastFor {
			limit = native.BusyRetrySlow
		}
		d = min(2*d, limit)
	}
	if n := len(want); n > 260 || want[n-1] != 50*time.Millisecond {
		t.Fatalf("the schedule has %d pauses ending %v: want the slow 50 ms pauses after the first half second", n, want[n-1])
	}
	if !slices.Equal(clock.pauses, want) {
		n := min(len(clock.pauses), 8)
		t.Errorf("%d pauses starting %v: want %d starting %v", len(clock.pauses), clock.pauses[:n], len(want), want[:8])
	}
	if got := requests.Load(); got != int64(len(want)+1) {
		t.Errorf("%d requests: want %d (one more than the pauses)", got, len(want)+1)
	}
}

// A server busy for 215 ms (the stand-in's window after a cancelled
// synthesis, met 15 ms after the cancel) gives the request the engine
// within 10 ms of the window's end: pauses of 50 ms would first try again
// at 262 ms.
func TestBusyRetryMeetsTheEndOfACancelsWindow(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	end := clock.t.Add(215 * time.Millisecond)
	var requests atomic.Int64
	addr := rawServer(t, func(int64) string {
		requests.Add(1)
		if clock.now().Before(end) {
			return "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
		}
		return streamHead + "4\r\n\x01\x00\x02\x00\r\n0\r\n\r\n"
	})
	c := native.NewClient(addr)
	native.SetBusyClock(c, clock.now, clock.sleep)
	if _, _, err := collect(t, c, pcmReq); err != nil {
		t.Fatal(err)
	}
	if late := clock.t.Sub(end); late > 10*time.Millisecond {
		t.Errorf("the engine was asked again %v after its busy window ended (pauses %v): want at most 10 ms", late, clock.pauses)
	}
	if n := requests.Load(); n > 40 {
		t.Errorf("%d requests in 215 ms: want at most 40", n)
	}
}

// A BusyRetry below the first step is the pause from the start.
func TestBusyRetryShorterThanFirstStep(t *testing.T) {
	addr, _ := busyServer(t, 2)
	c := native.NewClient(addr)
	c.BusyRetry = time.Millisecond
	clock := &fakeClock{t: time.Unix(0, 0)}
	native.SetBusyClock(c, clock.now, clock.sleep)
	if _, _, err := collect(t, c, pcmReq); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{time.Millisecond, time.Millisecond}; !slices.Equal(clock.pauses, want) {
		t.Errorf("pauses %v: want %v", clock.pauses, want)
	}
}
