//go:build race

package prompt

// raceEnabled reports whether the race detector is on; slow tests do less.
const raceEnabled = true
