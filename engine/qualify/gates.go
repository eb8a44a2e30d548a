package qualify

import (
	"fmt"
	"strings"

	"github.com/drama-tts/drama/engine/bench"
)

// Default gates.
const (
	DefaultFirstAudio      = 0.5  // seconds, warm streamed first audio p50
	DefaultFirstAudioMetal = 0.55 // the same on the Metal build (guidance on)
	DefaultRTF             = 1.0  // warm RTF p50 must be under this
	// BookedFactor is the memory booked for a variant as a multiple of
	// its pins' memory estimate: the full model's 38.5 GiB gives 54 GiB,
	// the cap the old launcher put on the engine's unit.
	BookedFactor = 1.4
)

// Gates are the thresholds a benchmark must meet.
type Gates struct {
	FirstAudio  float64 // seconds; warm streamed first audio p50 at most this
	RTF         float64 // warm RTF p50, whole and streamed, under this
	BookedBytes int64   // the peak memory at most this; 0: not gated
}

// Result is the outcome of one step or gate.
type Result struct {
	Name   string  `json:"name"`
	Pass   bool    `json:"pass"`
	Detail string  `json:"detail"`
	Value  float64 `json:"value,omitempty"`
}

// Evaluate checks a benchmark report against the gates.
func (g Gates) Evaluate(r *bench.Report) []Result {
	var out []Result
	var bad []string
	for _, q := range r.Requests {
		if !q.Valid() {
			bad = append(bad, fmt.Sprintf("%s %s %s: %s", q.Pass, q.Mode, q.TextID, q.Error))
		}
	}
	valid := Result{Name: "valid audio", Pass: len(bad) == 0, Detail: fmt.Sprintf("all %d replies were valid audio", len(r.Requests))}
	if len(bad) > 0 {
		valid.Detail = fmt.Sprintf("%d of %d replies were not valid audio: %s", len(bad), len(r.Requests), strings.Join(bad[:min(3, len(bad))], "; "))
	}
	out = append(out, valid)

	st := r.Mode(bench.Streamed)
	if d := st.All.FirstAudio; d == nil {
		out = append(out, Result{Name: "first audio", Detail: "no warm streamed replies to measure"})
	} else {
		res := Result{Name: "first audio", Value: d.P50, Pass: d.P50 <= g.FirstAudio}
		res.Detail = fmt.Sprintf("warm streamed first audio p50 %.3f s is within the gate %.3f s", d.P50, g.FirstAudio)
		if !res.Pass {
			res.Detail = fmt.Sprintf("warm streamed first audio p50 %.3f s is over the gate %.3f s", d.P50, g.FirstAudio)
		}
		out = append(out, res)
	}
	for _, mode := range []string{bench.Whole, bench.Streamed} {
		name := "rtf " + mode
		d := r.Mode(mode).All.RTF
		if d == nil {
			out = append(out, Result{Name: name, Detail: "no warm " + mode + " replies to measure"})
			continue
		}
		res := Result{Name: name, Value: d.P50, Pass: d.P50 < g.RTF}
		res.Detail = fmt.Sprintf("warm %s RTF p50 %.3f is under %.3f", mode, d.P50, g.RTF)
		if !res.Pass {
			res.Detail = fmt.Sprintf("warm %s RTF p50 %.3f is not under %.3f", mode, d.P50, g.RTF)
		}
		out = append(out, res)
	}
	if g.BookedBytes > 0 {
		peak := r.Memory.PeakBytes()
		res := Result{Name: "memory", Value: float64(peak), Pass: peak <= g.BookedBytes}
		res.Detail = fmt.Sprintf("peak %s is within the %s booked", gib(peak), gib(g.BookedBytes))
		if !res.Pass {
			res.Detail = fmt.Sprintf("peak %s is over the %s booked", gib(peak), gib(g.BookedBytes))
		}
		out = append(out, res)
	}
	return out
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// AllPass reports whether every result passed.
func AllPass(rs []Result) bool {
	for _, r := range rs {
		if !r.Pass {
			return false
		}
	}
	return len(rs) > 0
}

// FiguresOf takes the gated figures of a report for the marker.
func FiguresOf(r *bench.Report, booked int64) Figures {
	f := Figures{PeakBytes: r.Memory.PeakBytes(), BookedBytes: booked, ReadySeconds: r.ReadySeconds}
	if d := r.Mode(bench.Streamed).All.FirstAudio; d != nil {
		f.FirstAudioP50 = d.P50
	}
	if d := r.Mode(bench.Whole).All.RTF; d != nil {
		f.RTFWholeP50 = d.P50
	}
	if d := r.Mode(bench.Streamed).All.RTF; d != nil {
		f.RTFStreamedP50 = d.P50
	}
	return f
}
