package hub

import "time"

// Streams past DefaultWorkers are not taken on trust: more parallel ranged
// GETs help against a CDN that paces each connection, and cost throughput
// where the bytes are already arriving as fast as this host can write and
// hash them (on loopback, 32 streams moved less than 8). So a fetch with
// more workers starts with DefaultWorkers streams and doubles them only
// while a doubling raises the measured rate.
const (
	// rampTick is how often the rate is sampled.
	rampTick = 100 * time.Millisecond
	// rampSettle ticks let a change of level settle (new connections get
	// going, streams over the level finish their span); the next rampTicks
	// ticks make one measurement.
	rampSettle = 1
	rampTicks  = 2
	// rampGain is the least rate a trial of twice the streams must reach,
	// as a multiple of the rate before it, to be kept.
	rampGain = 1.10
	// rampBackoff and rampMaxBackoff are the measurements to wait before
	// trying again after a trial that gained too little; the wait doubles
	// with each such trial.
	rampBackoff    = 16
	rampMaxBackoff = 128
)

// ramp chooses how many streams may run. It starts at start and, whenever
// every allowed stream was busy through a whole measurement, tries twice as
// many (at most max) for one measurement. A trial that raises the rate by
// rampGain is kept and the next doubling is tried at once, from the trial's
// rate; one that does not
// is undone, and the next trial waits rampBackoff measurements, then twice
// that, up to rampMaxBackoff. It counts ticks, not time, so it is tested by
// feeding it rates.
type ramp struct {
	cur, max int
	trial    int     // the level being tried, 0 when none
	base     float64 // bytes per tick at cur when the trial began
	ticks    int     // ticks since the level last changed or was measured
	bytes    int64   // bytes in the measured ticks
	busy     bool    // every allowed stream was busy in each measured tick
	wait     int     // measurements before the next trial
	backoff  int     // the wait after the next trial that gains too little
}

func newRamp(start, max int) *ramp {
	return &ramp{cur: min(start, max), max: max, backoff: rampBackoff}
}

// level is the number of streams that may run now.
func (r *ramp) level() int {
	if r.trial > 0 {
		return r.trial
	}
	return r.cur
}

// observe takes the bytes written during one tick and whether every allowed
// stream was fetching at its end, and returns the level for the next tick.
func (r *ramp) observe(n int64, saturated bool) int {
	if r.cur >= r.max && r.trial == 0 {
		return r.cur
	}
	r.ticks++
	if r.ticks <= rampSettle {
		r.bytes, r.busy = 0, true
		return r.level()
	}
	r.bytes += n
	r.busy = r.busy && saturated
	if r.ticks < rampSettle+rampTicks {
		return r.level()
	}
	rate := float64(r.bytes) / rampTicks
	busy := r.busy
	r.ticks = 0
	if r.trial > 0 {
		kept := rate >= r.base*rampGain
		if kept {
			r.cur, r.wait, r.backoff = r.trial, 0, rampBackoff
		} else {
			r.wait, r.backoff = r.backoff, min(2*r.backoff, rampMaxBackoff)
		}
		r.trial = 0
		if !kept || r.cur >= r.max || !busy {
			return r.level()
		}
		// The trial's rate is the new base: try the next doubling at once.
	} else if r.wait > 0 {
		r.wait--
		return r.cur
	}
	if busy && rate > 0 {
		r.trial, r.base = min(2*r.cur, r.max), rate
	}
	return r.level()
}
