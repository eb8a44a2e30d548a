package model

import (
	"regexp"
	"strings"
	"testing"
)

// TestCheckIDIsIDPattern holds CheckID to the regular expression it
// documents, over ids at and around every edge.
func TestCheckIDIsIDPattern(t *testing.T) {
	re := regexp.MustCompile(IDPattern)
	ids := []string{"", "a", "0", "_a", "-a", "a_", "a-b", "A", "ab c", "é", "a.b", strings.Repeat("a", 64), strings.Repeat("a", 65), "x/y", "\x00"}
	for _, id := range ids {
		if got, want := ValidID(id), re.MatchString(id); got != want {
			t.Errorf("ValidID(%q) = %v, the pattern says %v", id, got, want)
		}
	}
}

func TestFrames(t *testing.T) {
	for samples, want := range map[int]int{0: 0, 1: 1, 2048: 1, 2049: 2, 1_323_000: 646} {
		if got := Frames(samples); got != want {
			t.Errorf("Frames(%d) = %d, want %d", samples, got, want)
		}
	}
}
