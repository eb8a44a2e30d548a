package bench

import (
	"math"
	"sort"
)

// Percentile returns the p-th percentile (0..100) of xs by linear
// interpolation between the closest ranks; NaN for no values.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := (float64(len(s)) - 1) * p / 100
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

// Dist is the distribution of one figure over a set of requests.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	// PassP50 is the median of each warm pass on its own, in pass order:
	// the run-to-run spread Compare weighs a difference against.
	PassP50 []float64 `json:"pass_p50,omitempty"`
}

// distOf summarises xs; byPass, when not nil, holds the same values split
// by warm pass.
func distOf(xs []float64, byPass [][]float64) *Dist {
	if len(xs) == 0 {
		return nil
	}
	d := &Dist{N: len(xs), P50: Percentile(xs, 50), P95: Percentile(xs, 95), P99: Percentile(xs, 99),
		Min: Percentile(xs, 0), Max: Percentile(xs, 100)}
	for _, p := range byPass {
		if len(p) > 0 {
			d.PassP50 = append(d.PassP50, Percentile(p, 50))
		}
	}
	return d
}
