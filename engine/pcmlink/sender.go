package pcmlink

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
)

// Sender is the plugin's end of a link. One synthesis at a time holds it
// (Take); the others go the gRPC way.
type Sender struct {
	conn   net.Conn
	mu     sync.Mutex // held by the synthesis that took the link
	broken bool       // a write failed mid-frame: the link is out of step
}

// NewSender returns the plugin's side of a link over conn.
func NewSender(conn net.Conn) *Sender { return &Sender{conn: conn} }

// NewSenderFile returns the plugin's side of a link over f, the plugin's
// end of a Pair, which it closes (the Sender holds its own descriptor).
func NewSenderFile(f *os.File) (*Sender, error) {
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	if _, ok := conn.(*net.UnixConn); !ok {
		conn.Close()
		return nil, errors.New("not a unix socket")
	}
	return NewSender(conn), nil
}

// Take returns the link for the synthesis the host gave id, or false when
// another synthesis holds it or it broke. The caller must Release it.
func (s *Sender) Take(id uint64) (*Send, bool) {
	if s == nil || id == 0 || !s.mu.TryLock() {
		return nil, false
	}
	if s.broken {
		s.mu.Unlock()
		return nil, false
	}
	return &Send{s: s, id: id}, true
}

// Close closes the plugin's end.
func (s *Sender) Close() error { return s.conn.Close() }

// Send is one synthesis's hold on the link.
type Send struct {
	s     *Sender
	id    uint64
	hdr   [headerSize]byte
	ended bool
}

// Write sends p as frames of at most MaxFrame bytes.
func (w *Send) Write(p []byte) error {
	if w.ended {
		return errors.New("pcm link: write after the end")
	}
	for len(p) > 0 {
		n := min(len(p), MaxFrame)
		if err := w.frame(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// End marks the audio complete, with trailer (at most MaxTrailer bytes)
// for the host's reader.
func (w *Send) End(trailer []byte) error {
	if w.ended {
		return nil
	}
	if len(trailer) > MaxTrailer {
		return fmt.Errorf("pcm link: a trailer of %d bytes, over the %d an end mark holds", len(trailer), MaxTrailer)
	}
	w.ended = true
	putHeader(&w.hdr, w.id, endFlag|uint32(len(trailer)))
	bufs := net.Buffers{w.hdr[:], trailer}
	_, err := bufs.WriteTo(w.s.conn)
	return w.broke(err)
}

// Release gives the link back; audio not ended gets the abort mark first,
// so the host's reader learns it is unfinished.
func (w *Send) Release() {
	if !w.ended {
		w.ended = true
		putHeader(&w.hdr, w.id, lengthAbort)
		_, err := w.s.conn.Write(w.hdr[:])
		w.broke(err)
	}
	w.s.mu.Unlock()
}

func (w *Send) frame(p []byte) error {
	putHeader(&w.hdr, w.id, uint32(len(p)))
	bufs := net.Buffers{w.hdr[:], p}
	_, err := bufs.WriteTo(w.s.conn)
	return w.broke(err)
}

// broke marks the link unusable after a failed write: part of a frame
// may have gone, so no later frame could be read in step.
func (w *Send) broke(err error) error {
	if err != nil {
		w.s.broken = true
		w.ended = true
		return fmt.Errorf("pcm link: write: %w", err)
	}
	return nil
}
