package hub

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// The caps on a tree listing, over all its pages together. A real
// checkpoint lists a few dozen files in a few kilobytes; a server that
// lists more is not a Hub serving a checkpoint, and drama stops reading
// it before it fills memory.
const (
	// MaxTreeEntries is the most entries (files and directories) a
	// listing may hold.
	MaxTreeEntries = 100_000
	// MaxTreeBytes is the most bytes of JSON a listing's pages may hold.
	MaxTreeBytes = 64 << 20
	// maxRefsBytes bounds the answer to a refs request.
	maxRefsBytes = 8 << 20
	// maxErrorMessage bounds the Hub's own message (X-Error-Message) that
	// an error carries; its body is never read.
	maxErrorMessage = 1024
)

// clip cuts s to at most n bytes, at a character's start, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("... (%d bytes more)", len(s)-n)
}

// ErrTooLarge is wrapped by every answer that reached one of drama's caps.
var ErrTooLarge = errors.New("answer too large")

// CapError is an answer of the Hub that reached a cap: the listing of a
// repository at a revision, or its refs.
type CapError struct {
	What     string // "listing" or "refs"
	Repo     string
	Revision string // "" for refs
	Cap      string // "entries" or "bytes"
	Limit    int64
	Endpoint string // the server that answered
}

// Error names the cap, the repository and revision, and what to do.
func (e *CapError) Error() string {
	of := e.Repo
	if e.Revision != "" {
		of += "@" + e.Revision
	}
	n := fmt.Sprintf("%d entries", e.Limit)
	if e.Cap == "bytes" {
		n = fmt.Sprintf("%d bytes (%d MiB)", e.Limit, e.Limit>>20)
	}
	return fmt.Sprintf("hub: %s of %s: %v: more than %s over all its pages, drama's cap; a Hub serving a checkpoint lists far fewer, "+
		"so the server at %s is not one: check the Hub address, or point it at the Hub or a mirror you trust", e.What, of, ErrTooLarge, n, e.Endpoint)
}

// Unwrap gives ErrTooLarge.
func (e *CapError) Unwrap() error { return ErrTooLarge }

// errBudget is what a budgetReader returns once its bytes are spent.
var errBudget = errors.New("byte budget spent")

// budgetReader reads from r while *left stays positive, taking every byte
// read from *left, which several readers (the pages of one listing) may
// share. Once it is spent, Read returns errBudget.
type budgetReader struct {
	r    io.Reader
	left *int64
}

func (b budgetReader) Read(p []byte) (int, error) {
	if *b.left <= 0 {
		return 0, errBudget
	}
	if int64(len(p)) > *b.left {
		p = p[:*b.left]
	}
	n, err := b.r.Read(p)
	*b.left -= int64(n)
	return n, err
}
