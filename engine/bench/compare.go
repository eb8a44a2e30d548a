package bench

import (
	"math"
	"slices"
)

// NoiseFloor widens each per-pass range by this share of its own value
// before ranges are compared, so that timer resolution alone never counts
// as a change.
const NoiseFloor = 0.02

// NoiseFloorSeconds is the least a range of times is widened by on each
// side, for the same reason.
const NoiseFloorSeconds = 0.002

// Row is one figure of two reports side by side.
type Row struct {
	Mode   string  `json:"mode"`   // Whole or Streamed
	Group  string  `json:"group"`  // "all", "voice X" or a length class
	Figure string  `json:"figure"` // "first_audio_s p50", "rtf p95", ...
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	Ratio  float64 `json:"ratio"` // B / A; for a word error rate 0 when A is 0
	// Changed is true when B's per-pass medians lie wholly outside A's
	// (docs/bench.md says when); only p50 rows carry a verdict.
	Changed bool `json:"changed"`
	// Verdict is "slower", "faster", "same" or "" (no per-pass figures);
	// for a word error rate "worse", "better" or "same".
	Verdict string `json:"verdict,omitempty"`
}

// Compare sets the warm figures of a and b side by side.
func Compare(a, b *Report) []Row {
	var rows []Row
	for _, mode := range []string{Whole, Streamed} {
		ma, mb := a.Mode(mode), b.Mode(mode)
		rows = append(rows, compareFigures(mode, "all", &ma.All, &mb.All)...)
		for _, c := range []string{Short, Medium, Long} {
			if fa, fb := ma.ByClass[c], mb.ByClass[c]; fa != nil && fb != nil {
				rows = append(rows, compareFigures(mode, c, fa, fb)...)
			}
		}
		var names []string
		for v := range ma.ByVoice {
			if mb.ByVoice[v] != nil {
				names = append(names, v)
			}
		}
		slices.Sort(names)
		if len(names) > 1 {
			for _, v := range names {
				rows = append(rows, compareFigures(mode, "voice "+v, ma.ByVoice[v], mb.ByVoice[v])...)
			}
		}
	}
	return append(rows, compareWER(a, b)...)
}

// FigureWER names the word error rate rows of a comparison; their A and B
// are rates (0.0131 is 1.31 %).
const FigureWER = "wer"

// compareWER sets the word error rates of two reports side by side: all
// replies, each voice both have when there are several, and each text
// whose rate differs. A rate counts as changed when the ranges of its
// per-pass rates do not overlap, widened as Differs widens them; the
// verdict is then "worse" or "better".
func compareWER(a, b *Report) []Row {
	wa, wb := a.Summary.WER, b.Summary.WER
	if wa == nil || wb == nil {
		return nil
	}
	row := func(group string, fa, fb *WERFigures) Row {
		r := Row{Mode: Whole, Group: group, Figure: FigureWER, A: fa.Rate, B: fb.Rate}
		if fa.Rate > 0 {
			r.Ratio = fb.Rate / fa.Rate // a perfect A has no ratio: 0, which JSON can carry where NaN cannot
		}
		r.Changed, r.Verdict = Differs(fa.PassRates, fb.PassRates, 0)
		switch r.Verdict {
		case "slower":
			r.Verdict = "worse"
		case "faster":
			r.Verdict = "better"
		}
		return r
	}
	rows := []Row{row("all", &wa.All, &wb.All)}
	var names []string
	for v := range wa.ByVoice {
		if wb.ByVoice[v] != nil {
			names = append(names, v)
		}
	}
	slices.Sort(names)
	if len(names) > 1 {
		for _, v := range names {
			rows = append(rows, row("voice "+v, wa.ByVoice[v], wb.ByVoice[v]))
		}
	}
	for _, t := range a.Corpus.Texts {
		if fa, fb := wa.ByText[t.ID], wb.ByText[t.ID]; fa != nil && fb != nil && fa.Rate != fb.Rate {
			rows = append(rows, row("text "+t.ID, fa, fb))
		}
	}
	return rows
}

func compareFigures(mode, group string, a, b *Figures) []Row {
	var rows []Row
	for _, f := range []struct {
		name string
		a, b *Dist
	}{{"first_audio_s", a.FirstAudio, b.FirstAudio}, {"total_s", a.Total, b.Total}, {"rtf", a.RTF, b.RTF}} {
		if f.a == nil || f.b == nil {
			continue
		}
		for _, p := range []struct {
			name string
			a, b float64
		}{{"p50", f.a.P50, f.b.P50}, {"p95", f.a.P95, f.b.P95}, {"p99", f.a.P99, f.b.P99}} {
			r := Row{Mode: mode, Group: group, Figure: f.name + " " + p.name, A: p.a, B: p.b, Ratio: ratio(p.b, p.a)}
			if p.name == "p50" {
				abs := NoiseFloorSeconds
				if f.name == "rtf" {
					abs = 0
				}
				r.Changed, r.Verdict = Differs(f.a.PassP50, f.b.PassP50, abs)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func ratio(b, a float64) float64 {
	if a == 0 {
		return math.NaN()
	}
	return b / a
}

// Differs decides whether two sets of per-pass medians differ by more
// than their spread: their ranges, each widened on both sides by
// NoiseFloor of its value or by abs, whichever is more, do not overlap. The verdict is "slower" when b lies above a (every figure
// here is a time), "faster" below, "same" when they overlap and "" when
// either set is empty.
func Differs(a, b []float64, abs float64) (bool, string) {
	if len(a) == 0 || len(b) == 0 {
		return false, ""
	}
	alo, ahi := slices.Min(a), slices.Max(a)
	blo, bhi := slices.Min(b), slices.Max(b)
	widen := func(v float64) float64 { return max(math.Abs(v)*NoiseFloor, abs) }
	alo, ahi = alo-widen(alo), ahi+widen(ahi)
	blo, bhi = blo-widen(blo), bhi+widen(bhi)
	switch {
	case blo > ahi:
		return true, "slower"
	case bhi < alo:
		return true, "faster"
	}
	return false, "same"
}
