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
	wmu    sync.Mutex // held while a frame is written
	broken bool       // a write failed mid-frame: the link is out of step (under wmu)
	stage  []byte     // the frame the holder is gathering (Write with more)
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
	s.wmu.Lock()
	broken := s.broken
	s.wmu.Unlock()
	if broken {
		s.mu.Unlock()
		return nil, false
	}
	s.stage = s.stage[:0]
	return &Send{s: s, id: id}, true
}

// Close closes the plugin's end.
func (s *Sender) Close() error { return s.conn.Close() }

// Send is one synthesis's hold on the link.
type Send struct {
	s     *Sender
	id    uint64
	hdr   [headerSize]byte
	ended bool // the end or abort mark went (or the link broke)
	given bool // the link is given back
}

// Write sends p as frames of at most MaxFrame bytes. With more (the
// caller has more audio at hand), p may wait in a frame being gathered,
// so audio that came in a burst crosses in a few large frames; without,
// everything gathered goes at once.
func (w *Send) Write(p []byte, more bool) error {
	if w.ended {
		return errors.New("pcm link: write after the end")
	}
	st := &w.s.stage
	for len(p) > 0 {
		if len(*st) == 0 && (len(p) >= MaxFrame || !more) {
			n := min(len(p), MaxFrame) // nothing gathered: no copy
			if err := w.frame(p[:n]); err != nil {
				return err
			}
			p = p[n:]
			continue
		}
		if *st == nil {
			*st = make([]byte, 0, MaxFrame)
		}
		n := min(len(p), MaxFrame-len(*st))
		*st, p = append(*st, p[:n]...), p[n:]
		if len(*st) == MaxFrame {
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	if !more {
		return w.flush()
	}
	return nil
}

// flush sends the frame gathered so far.
func (w *Send) flush() error {
	st := &w.s.stage
	if len(*st) == 0 {
		return nil
	}
	err := w.frame(*st)
	*st = (*st)[:0]
	return err
}

// End sends what was gathered and marks the audio complete, with trailer (at most MaxTrailer bytes)
// for the host's reader, and gives the link back at once: the next
// synthesis may take it as soon as the host has the end.
func (w *Send) End(trailer []byte) error {
	if w.ended {
		return nil
	}
	if len(trailer) > MaxTrailer {
		return fmt.Errorf("pcm link: a trailer of %d bytes, over the %d an end mark holds", len(trailer), MaxTrailer)
	}
	if err := w.flush(); err != nil {
		return err
	}
	w.ended = true
	putHeader(&w.hdr, w.id, endFlag|uint32(len(trailer)))
	return w.last(net.Buffers{w.hdr[:], trailer})
}

// Release gives the link back if End has not; audio not ended gets the
// abort mark first, so the host's reader learns it is unfinished.
func (w *Send) Release() {
	if !w.ended {
		w.ended = true
		putHeader(&w.hdr, w.id, lengthAbort)
		w.last(net.Buffers{w.hdr[:]})
		return
	}
	w.give()
}

// last writes the end or abort mark, giving the link back first, while
// no other frame can be written: a synthesis that takes the link at once
// writes after the mark, and no reader has the mark before the link is
// free to take.
func (w *Send) last(b net.Buffers) error {
	w.s.wmu.Lock()
	defer w.s.wmu.Unlock()
	w.give()
	_, err := b.WriteTo(w.s.conn)
	return w.brokeLocked(err)
}

func (w *Send) give() {
	if !w.given {
		w.given = true
		w.s.mu.Unlock()
	}
}

func (w *Send) frame(p []byte) error {
	w.s.wmu.Lock()
	defer w.s.wmu.Unlock()
	putHeader(&w.hdr, w.id, uint32(len(p)))
	_, err := (&net.Buffers{w.hdr[:], p}).WriteTo(w.s.conn)
	return w.brokeLocked(err)
}

// brokeLocked marks the link unusable after a failed write: part of a
// frame may have gone, so no later frame could be read in step. The
// caller holds wmu.
func (w *Send) brokeLocked(err error) error {
	if err != nil {
		w.s.broken = true
		w.ended = true
		return fmt.Errorf("pcm link: write: %w", err)
	}
	return nil
}
