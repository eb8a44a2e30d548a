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
	// DefaultWER is the word error rate the warm whole replies may reach
	// when a transcriber hears them: upstream measures 1.31 % with a
	// reference voice and 2.92 % in the built-in voice (Whisper large-v3,
	// 24 English texts); 5 % leaves room for another transcriber and
	// corpus while noise, or speech of the wrong words, stays far above it.
	DefaultWER = 0.05
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
	// WER is the word error rate of the warm whole replies at most this
	// (0.05 is 5 %), when the report has one (a transcriber heard them).
	WER float64
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
	if w := r.Summary.WER; w != nil {
		out = append(out, g.evaluateWER(w))
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

// evaluateWER gates the word error rate: every warm whole reply
// transcribed, their pooled rate at most the gate.
func (g Gates) evaluateWER(w *bench.WERSummary) Result {
	res := Result{Name: "word error rate", Value: w.All.Rate}
	what := fmt.Sprintf("the warm whole replies' word error rate %s (%d errors in %d words of %d replies, heard by %s)",
		bench.Percent(w.All.Rate), w.All.Errors, w.All.Words, w.All.Replies, w.Transcriber)
	switch {
	case w.All.Replies == 0:
		res.Detail = "no warm whole reply was transcribed: " + what
	case w.Untranscribed > 0:
		res.Detail = fmt.Sprintf("%d warm whole replies were not transcribed (the transcription server answered an error: see transcribe_error in the report); %s", w.Untranscribed, what)
	case w.All.Rate <= g.WER:
		res.Pass = true
		res.Detail = fmt.Sprintf("%s is within the gate %s", what, bench.Percent(g.WER))
	default:
		worst, rate := "", -1.0
		for id, f := range w.ByText {
			if f.Rate > rate || f.Rate == rate && id < worst {
				worst, rate = id, f.Rate
			}
		}
		res.Detail = fmt.Sprintf("%s is over the gate %s: the replies do not say their texts (worst: text %s at %s)", what, bench.Percent(g.WER), worst, bench.Percent(rate))
	}
	return res
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
