package native

import (
	"net"
	"sync"
	"time"
)

// DefaultIdleTimeout is how long a connection whose reply was read to its
// end waits for the client's next request before it is closed.
const DefaultIdleTimeout = 2 * time.Second

// maxIdle is the most connections kept waiting: one synthesis at a time
// and a health check beside it.
const maxIdle = 2

// idleConns keeps the connections whose last reply was read to its framed
// end and whose server let them stay open (HTTP/1.1 keep-alive), for the
// next request: a synthesis then skips the connect, and the server the
// accept. Each is closed once it has waited its timeout, and one the
// server has closed meanwhile is dropped when it is taken (peerClosed).
type idleConns struct {
	mu    sync.Mutex
	conns []*idleConn
}

type idleConn struct {
	c     net.Conn
	timer *time.Timer
}

// get returns the connection put last that the server still holds open,
// closing those it has closed; nil when there is none.
func (p *idleConns) get() net.Conn {
	for {
		p.mu.Lock()
		n := len(p.conns)
		if n == 0 {
			p.mu.Unlock()
			return nil
		}
		ic := p.conns[n-1]
		p.conns = p.conns[:n-1]
		p.mu.Unlock()
		if !ic.timer.Stop() {
			continue // its timeout closed it
		}
		if peerClosed(ic.c) {
			ic.c.Close()
			continue
		}
		return ic.c
	}
}

// put keeps c for the next request for at most timeout, closing the
// oldest kept one beyond maxIdle.
func (p *idleConns) put(c net.Conn, timeout time.Duration) {
	ic := &idleConn{c: c}
	p.mu.Lock()
	ic.timer = time.AfterFunc(timeout, func() { p.drop(ic) })
	p.conns = append(p.conns, ic)
	var oldest *idleConn
	if len(p.conns) > maxIdle {
		oldest = p.conns[0]
		p.conns = p.conns[1:]
	}
	p.mu.Unlock()
	if oldest != nil && oldest.timer.Stop() {
		oldest.c.Close()
	}
}

// drop closes ic once its timeout passed, unless a request took it.
func (p *idleConns) drop(ic *idleConn) {
	p.mu.Lock()
	for i, x := range p.conns {
		if x == ic {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	ic.c.Close()
}

// closeAll closes every kept connection.
func (p *idleConns) closeAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, ic := range conns {
		if ic.timer.Stop() {
			ic.c.Close()
		}
	}
}
