package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
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
	depth    func() int
	restarts atomic.Int64

	mu         sync.Mutex
	byStatus   map[int]uint64
	firstAudio *histogram
	rtf        *histogram
	synthTotal time.Duration
	synthN     int
}

func newMetrics(depth func() int) *metrics {
	return &metrics{
		depth:      depth,
		byStatus:   map[int]uint64{},
		firstAudio: newHistogram(0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10),
		rtf:        newHistogram(0.25, 0.5, 0.75, 1, 1.5, 2, 4),
	}
}

func (m *metrics) observeRequest(status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byStatus[status]++
}

// observeSynthesis records time to first audio and the real-time factor
// (wall time over audio time) of one synthesis.
func (m *metrics) observeSynthesis(firstAudio, elapsed, audio time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.firstAudio.observe(firstAudio.Seconds())
	if audio > 0 {
		m.rtf.observe(elapsed.Seconds() / audio.Seconds())
	}
	m.synthTotal += elapsed
	m.synthN++
}

// meanSynthesis is the mean wall time of a synthesis so far (1 s before
// the first).
func (m *metrics) meanSynthesis() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.synthN == 0 {
		return time.Second
	}
	return m.synthTotal / time.Duration(m.synthN)
}

func (m *metrics) serve(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(w, "# HELP drama_requests_total Speech requests by HTTP status.\n# TYPE drama_requests_total counter\n")
	codes := make([]int, 0, len(m.byStatus))
	for c := range m.byStatus {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "drama_requests_total{status=\"%d\"} %d\n", c, m.byStatus[c])
	}
	fmt.Fprintf(w, "# HELP drama_queue_depth Requests waiting for the engine.\n# TYPE drama_queue_depth gauge\ndrama_queue_depth %d\n", m.depth())
	fmt.Fprintf(w, "# HELP drama_engine_restarts_total Engine restarts after a failure.\n# TYPE drama_engine_restarts_total counter\ndrama_engine_restarts_total %d\n", m.restarts.Load())
	m.firstAudio.write(w, "drama_first_audio_seconds", "Time from request to the first audio byte.")
	m.rtf.write(w, "drama_real_time_factor", "Synthesis wall time over audio duration.")
}
