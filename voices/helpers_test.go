package voices

import "time"

var v0time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// makeCodes returns valid codes of the given frames, seeded by seed.
func makeCodes(frames, seed int) Codes {
	c := make(Codes, NumCodebooks)
	for cb := range c {
		c[cb] = make([]int, frames)
		limit := ResidualCodebookSize
		if cb == 0 {
			limit = SemanticCodebookSize
		}
		for t := range c[cb] {
			c[cb][t] = (seed*7919 + cb*104729 + t*31) % limit
		}
	}
	return c
}
