package engine

import (
	"bytes"
	"sync"
)

// TailSize is how much a Tail keeps unless told otherwise: 64 KiB.
const TailSize = 64 << 10

// Tail keeps the last bytes written to it: a ring buffer for a plugin's
// stderr or a native engine's output, so a failure can show what the
// process said last. It is safe for concurrent use.
type Tail struct {
	mu   sync.Mutex
	buf  []byte
	size int
}

// NewTail returns a tail keeping the last size bytes (TailSize when 0).
func NewTail(size int) *Tail {
	if size <= 0 {
		size = TailSize
	}
	return &Tail{size: size}
}

// Write implements io.Writer; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.size {
		t.buf = append(t.buf[:0], p[len(p)-t.size:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.size; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the kept bytes, from the first whole line when the start
// was cut.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) == t.size {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// Lines returns at most the last n lines of the tail.
func (t *Tail) Lines(n int) string {
	s := t.String()
	end := len(s)
	for i := len(s) - 2; i >= 0; i-- {
		if s[i] == '\n' {
			if n--; n == 0 {
				return s[i+1 : end]
			}
		}
	}
	return s
}
