package native

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultReserve is the memory kept free beyond a variant's estimate.
const DefaultReserve = 2 << 30

// ErrMemory is wrapped by a refused admission.
var ErrMemory = errors.New("native: not enough memory")

// Memory is what the machine has available for the engine.
type Memory struct {
	Available uint64 // bytes the engine may use
	Source    string // where the figure came from, e.g. "MemAvailable" or "cgroup /user.slice memory.max"
}

// AdmissionError is a refused admission: want Need bytes, got Available.
type AdmissionError struct {
	Need, Available uint64
	Source          string
}

// Error implements error.
func (e *AdmissionError) Error() string {
	return fmt.Sprintf("native: not enough memory to load the engine: want %s (estimate and reserve), got %s available (%s); "+
		"free memory, or set admission to external (an outer scheduler decides) or off",
		gib(e.Need), gib(e.Available), e.Source)
}

// Unwrap returns ErrMemory.
func (e *AdmissionError) Unwrap() error { return ErrMemory }

func gib(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }

// Admit checks an estimate plus reserve against mem under the mode: "own"
// (or empty) checks, "external" and "off" never refuse.
func Admit(mode string, estimate, reserve uint64, mem Memory) error {
	switch strings.ToLower(mode) {
	case "", "own":
	case "external", "off":
		return nil
	default:
		return fmt.Errorf("native: admission: want own, external or off, got %q", mode)
	}
	if need := estimate + reserve; need > mem.Available {
		return &AdmissionError{Need: need, Available: mem.Available, Source: mem.Source}
	}
	return nil
}
