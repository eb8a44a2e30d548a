package pcmlink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Receiver is the host's end of a link: it reads frames and hands each to
// the Reader of its id.
type Receiver struct {
	conn   net.Conn
	br     *bufio.Reader
	bufs   sync.Pool
	bytes  atomic.Int64 // PCM handed to readers
	frames atomic.Int64 // frames of it

	mu      sync.Mutex
	last    uint64
	waiting map[uint64]*Reader
	err     error         // why the link ended
	dead    chan struct{} // closed when it ended
}

// NewReceiver starts reading frames from conn, the host's end of a link.
func NewReceiver(conn net.Conn) *Receiver {
	r := &Receiver{conn: conn, br: bufio.NewReaderSize(conn, readBuffer), waiting: map[uint64]*Reader{}, dead: make(chan struct{})}
	r.bufs.New = func() any { b := make([]byte, MaxFrame); return &b }
	go r.run()
	return r
}

// Open returns a Reader for a new synthesis; its ID goes to the plugin
// with the request. The caller must Close it.
func (r *Receiver) Open() *Reader {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last++
	rd := &Reader{r: r, id: r.last, frames: make(chan frame, readerQueue), gone: make(chan struct{})}
	if r.err == nil {
		r.waiting[rd.id] = rd
	}
	return rd
}

// Bytes returns how many bytes of PCM the link has handed to readers.
func (r *Receiver) Bytes() int64 { return r.bytes.Load() }

// Frames returns in how many frames Bytes came.
func (r *Receiver) Frames() int64 { return r.frames.Load() }

// Close ends the link; Readers still waiting get ErrClosed.
func (r *Receiver) Close() error {
	err := r.conn.Close()
	<-r.dead
	return err
}

// readBuffer is what one read from the socket may take: several frames
// queued there come in one call.
const readBuffer = 256 << 10

// readerQueue is how many frames wait for a Reader that is behind: the
// link stops for it beyond that, and the plugin's writes wait.
const readerQueue = 2

type frame struct {
	buf     *[]byte // nil for the end marks
	n       int
	end     error  // io.EOF or ErrAborted with buf nil
	trailer []byte // with io.EOF: what the end mark carried
}

func (r *Receiver) run() {
	err := r.readFrames()
	r.mu.Lock()
	if errors.Is(err, net.ErrClosed) {
		err = ErrClosed
	}
	r.err = err
	r.waiting = nil
	r.mu.Unlock()
	close(r.dead)
}

// readFrames hands frames on until the link breaks, which it returns.
func (r *Receiver) readFrames() error {
	var h [headerSize]byte
	for {
		if _, err := io.ReadFull(r.br, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("pcm link: the plugin closed it")
			}
			return fmt.Errorf("pcm link: read: %w", err)
		}
		id, n := parseHeader(h[:])
		f, err := r.readFrame(n)
		if err != nil {
			return err
		}
		r.deliver(id, f)
	}
}

// readFrame reads the body of a frame whose length word is n.
func (r *Receiver) readFrame(n uint32) (frame, error) {
	switch {
	case n == lengthAbort:
		return frame{end: ErrAborted}, nil
	case n&endFlag != 0:
		f := frame{end: io.EOF}
		if k := n &^ endFlag; k > 0 {
			if k > MaxTrailer {
				return f, fmt.Errorf("pcm link: an end mark with a trailer of %d bytes, over the %d it may hold: the plugin is not speaking this link's protocol", k, MaxTrailer)
			}
			f.trailer = make([]byte, k)
			if _, err := io.ReadFull(r.br, f.trailer); err != nil {
				return f, fmt.Errorf("pcm link: read a trailer of %d bytes: %w", k, io.ErrUnexpectedEOF)
			}
		}
		return f, nil
	case n == 0 || n > MaxFrame:
		return frame{}, fmt.Errorf("pcm link: a frame of %d bytes, where a frame holds 1 to %d: the plugin is not speaking this link's protocol", n, MaxFrame)
	}
	f := frame{n: int(n), buf: r.bufs.Get().(*[]byte)}
	if _, err := io.ReadFull(r.br, (*f.buf)[:n]); err != nil {
		r.bufs.Put(f.buf)
		return f, fmt.Errorf("pcm link: read a frame of %d bytes: %w", n, io.ErrUnexpectedEOF)
	}
	return f, nil
}

// deliver hands f to the Reader of id, or drops it when nobody waits for
// id (any more).
func (r *Receiver) deliver(id uint64, f frame) {
	r.mu.Lock()
	rd := r.waiting[id]
	if f.end != nil && rd != nil {
		delete(r.waiting, id) // its last frame: later ones are stray
	}
	r.mu.Unlock()
	if rd != nil {
		select {
		case rd.frames <- f:
			if f.buf != nil {
				r.bytes.Add(int64(f.n))
				r.frames.Add(1)
			}
			return
		case <-rd.gone:
		}
	}
	if f.buf != nil {
		r.bufs.Put(f.buf)
	}
}

// Reader is one synthesis's audio on the link.
type Reader struct {
	r       *Receiver
	id      uint64
	frames  chan frame
	gone    chan struct{}
	once    sync.Once
	held    *[]byte // the frame Next returned last
	err     error
	trailer []byte
}

// Trailer returns what the plugin's end mark carried, once Next returned
// io.EOF.
func (rd *Reader) Trailer() []byte { return rd.trailer }

// ID returns the id the plugin must put on this synthesis's frames.
func (rd *Reader) ID() uint64 { return rd.id }

// Next returns the next frame's PCM, valid until the next call; io.EOF
// after the plugin's end mark, ErrAborted after its abort mark, the
// context's error when ctx ends first, and the link's error when it broke.
func (rd *Reader) Next(ctx context.Context) ([]byte, error) {
	rd.release()
	if rd.err != nil {
		return nil, rd.err
	}
	select {
	case f := <-rd.frames:
		return rd.take(f)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-rd.r.dead:
		select {
		case f := <-rd.frames: // handed over before the link ended
			return rd.take(f)
		default:
		}
		rd.err = rd.r.err
		return nil, rd.err
	}
}

func (rd *Reader) take(f frame) ([]byte, error) {
	if f.end != nil {
		rd.err, rd.trailer = f.end, f.trailer
		return nil, f.end
	}
	rd.held = f.buf
	return (*f.buf)[:f.n], nil
}

func (rd *Reader) release() {
	if rd.held != nil {
		rd.r.bufs.Put(rd.held)
		rd.held = nil
	}
}

// Close stops waiting for the synthesis: frames of its id still to come
// are dropped. Close is safe to call more than once.
func (rd *Reader) Close() {
	rd.once.Do(func() {
		rd.r.mu.Lock()
		delete(rd.r.waiting, rd.id)
		rd.r.mu.Unlock()
		close(rd.gone)
		rd.release()
		for {
			select {
			case f := <-rd.frames:
				if f.buf != nil {
					rd.r.bufs.Put(f.buf)
				}
			default:
				return
			}
		}
	})
}
