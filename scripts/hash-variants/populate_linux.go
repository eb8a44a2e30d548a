package main

import "golang.org/x/sys/unix"

// populateAdvice is the madvise advice of -populate: fill the window's page
// tables in one call (Linux 5.14 and later).
func populateAdvice() (int, error) { return unix.MADV_POPULATE_READ, nil }
