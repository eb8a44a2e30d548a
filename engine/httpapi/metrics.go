package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drama-tts/drama/engine/pool"
)

// histogram is a Prometheus-style cumulative histogram.
type histogram struct {
	bounds []float64
	counts []uint64 // one per bound, plus +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

func (h *histogram) write(w io.Writer, name, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%g\"} %d\n", name, b, cum)
	}
	cum += h.counts[len(h.bounds)]
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, cum, name, h.sum, name, h.n)
}

// metrics are drama serve's counters, gauges and histograms.
type metrics struct {
	pool    *pool.Pool
	stalled atomic.Int64 // clients cut for accepting no audio
	// catalogRestarts counts restarts that loaded a clone into a catalog.
	catalogRestarts atomic.Int64
	// hold is how long a request holds the engine's slot, the time the
	// queue takes to move one place (1 s before anything was measured).
	hold *movingMean

	mu         sync.Mutex
	byStatus   map[int]uint64
	cut        map[string]uint64 // replies cut short after they began, by cause
	firstAudio *histogram
	rtf        *histogram
	queueWait  *histogram
}

// movingMean is a mean of durations over about the last 16 of them, safe
// for concurrent use.
type movingMean struct {
	mu   sync.Mutex
	none time.Duration // the value before the first duration
	mean time.Duration
	n    int
}

// add folds d into the mean.
func (m *movingMean) add(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == 0 {
		m.mean = d
	} else {
		m.mean += (d - m.mean) / time.Duration(min(m.n+1, 16))
	}
	m.n++
}

// value is the mean, or none before the first duration.
func (m *movingMean) value() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == 0 {
		return m.none
	}
	return m.mean
}

func newMetrics(p *pool.Pool) *metrics {
	return &metrics{
		pool:       p,
		byStatus:   map[int]uint64{},
		cut:        map[string]uint64{"engine_failed": 0, "encoder_failed": 0, "client_stalled": 0, "client_closed": 0},
		firstAudio: newHistogram(0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10),
		rtf:        newHistogram(0.25, 0.5, 0.75, 1, 1.5, 2, 4),
		queueWait:  newHistogram(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
		hold:       &movingMean{none: time.Second},
	}
}

func (m *metrics) observeRequest(status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byStatus[status]++
}

// observeCut counts a reply cut short after it began, by its cause (an
// error code).
func (m *metrics) observeCut(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cut[reason]++
}

// observeSynthesis records time to first audio (from the request's
// arrival) and the real-time factor: engine time over audio time, the
// engine's time counted from the moment the request got the engine's slot,
// so that time spent queued is not in it.
func (m *metrics) observeSynthesis(firstAudio, engineTime, audio time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.firstAudio.observe(firstAudio.Seconds())
	if audio > 0 {
		m.rtf.observe(engineTime.Seconds() / audio.Seconds())
	}
}

// observeQueueWait records how long a request waited for the engine.
func (m *metrics) observeQueueWait(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queueWait.observe(d.Seconds())
}

func (m *metrics) serve(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(w, "# HELP drama_requests_total Speech requests by HTTP status (a reply cut short after it began counts under its 200: see drama_replies_cut_total).\n# TYPE drama_requests_total counter\n")
	codes := make([]int, 0, len(m.byStatus))
	for c := range m.byStatus {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "drama_requests_total{status=\"%d\"} %d\n", c, m.byStatus[c])
	}
	fmt.Fprintf(w, "# HELP drama_replies_cut_total Speech replies cut short after they began (status 200 sent), by cause.\n# TYPE drama_replies_cut_total counter\n")
	reasons := make([]string, 0, len(m.cut))
	for r := range m.cut {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "drama_replies_cut_total{reason=%q} %d\n", r, m.cut[r])
	}
	fmt.Fprintf(w, "# HELP drama_queue_depth Requests waiting for the engine.\n# TYPE drama_queue_depth gauge\ndrama_queue_depth %d\n", m.pool.Depth())
	fmt.Fprintf(w, "# HELP drama_stalled_clients_total Replies cut because the client accepted no audio within the stall timeout.\n# TYPE drama_stalled_clients_total counter\ndrama_stalled_clients_total %d\n", m.stalled.Load())
	fmt.Fprintf(w, "# HELP drama_catalog_restarts_total Engine restarts that loaded a cloned voice into the catalog.\n# TYPE drama_catalog_restarts_total counter\ndrama_catalog_restarts_total %d\n", m.catalogRestarts.Load())
	// one reading of the engines gives the total and each engine's figure,
	// so that the total is their sum: the supervisors count, nothing else
	engines := m.pool.Engines()
	restarts := 0
	for _, e := range engines {
		restarts += e.Status.Restarts
	}
	fmt.Fprintf(w, "# HELP drama_engine_restarts_total Engine restarts after a failure, of all the engines.\n# TYPE drama_engine_restarts_total counter\ndrama_engine_restarts_total %d\n", restarts)
	m.firstAudio.write(w, "drama_first_audio_seconds", "Time from request to the first audio byte.")
	m.rtf.write(w, "drama_real_time_factor", "Engine time (from the request's turn at the engine) over audio duration.")
	m.queueWait.write(w, "drama_queue_wait_seconds", "Time a request waited in the queue for the engine.")
	writeEngines(w, engines)
}

// writeEngines writes the per-engine series of engines, labelled
// engine="NAME".
func writeEngines(w io.Writer, engines []pool.EngineState) {
	series := []struct {
		name, kind, help string
		value            func(pool.EngineState) uint64
	}{
		{"drama_engine_ready", "gauge", "1 while the engine is ready to serve.", func(e pool.EngineState) uint64 { return b2u(e.Status.Ready) }},
		{"drama_engine_busy", "gauge", "1 while the engine serves a request.", func(e pool.EngineState) uint64 { return b2u(e.Busy) }},
		{"drama_engine_loaded", "gauge", "1 while the engine has its model loaded.", func(e pool.EngineState) uint64 { return b2u(e.Loaded) }},
		{"drama_engine_requests_total", "counter", "Requests handed to the engine.", func(e pool.EngineState) uint64 { return e.Served }},
		{"drama_engine_warm_requests_total", "counter", "Requests handed to the engine while it held their voice in its prefix cache.", func(e pool.EngineState) uint64 { return e.WarmHits }},
		{"drama_engine_restarts", "gauge", "Restarts of the engine after a failure since drama serve started.", func(e pool.EngineState) uint64 { return uint64(e.Status.Restarts) }},
	}
	for _, s := range series {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", s.name, s.help, s.name, s.kind)
		for _, e := range engines {
			fmt.Fprintf(w, "%s{engine=%q} %d\n", s.name, e.Name, s.value(e))
		}
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
