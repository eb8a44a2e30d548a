package host

import "sync"

// Tail keeps the last bytes written to it: a ring buffer for a plugin's
// stderr, so a failure can show what the plugin said last.
type Tail struct {
	mu   sync.Mutex
	buf  []byte
	size int
}

// NewTail returns a Tail keeping the last size bytes.
func NewTail(size int) *Tail { return &Tail{size: size} }

// Write keeps the end of p; it never fails.
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

// String returns what is kept.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
