//go:build !linux

package main

import (
	"errors"
	"runtime"
)

// populateAdvice fails: MADV_POPULATE_READ is Linux's alone.
func populateAdvice() (int, error) {
	return 0, errors.New("-populate needs MADV_POPULATE_READ, which Linux has (5.14 and later) and " + runtime.GOOS + " does not: leave -populate off")
}
