package httpguard

import (
	"bufio"
	"container/list"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Listener.
type Config struct {
	// MaxConns caps the connections open at once. When a connection
	// arrives at the cap, the listener closes the one longest idle (a
	// keep-alive connection between requests, or one that has sent
	// nothing yet) to make room; if none is idle, the new one waits
	// (holding one descriptor) until one closes or goes idle, and those
	// behind it wait in the kernel's accept queue. Must be positive.
	MaxConns int
	// MaxConnsPerAddr caps the connections open at once from one remote
	// address (an IPv6 one by its /64). A connection past it is answered
	// HTTP 429 and closed. Zero means MaxConns.
	MaxConnsPerAddr int
}

// Stats counts what a Listener did.
type Stats struct {
	Open      int    // connections open now
	Reclaimed uint64 // idle connections closed to make room for a new one
	Refused   uint64 // connections closed at once: their address was at MaxConnsPerAddr
}

// Listener wraps a net.Listener with Config's caps. Give its ConnState to
// the http.Server that serves it (Serve), so that it knows which
// connections are idle.
type Listener struct {
	net.Listener
	max, perAddr int

	mu     sync.Mutex
	open   int
	byAddr map[netip.Addr]int
	idle   list.List     // of *conn that may be reclaimed, longest idle first
	wake   chan struct{} // a slot was freed or a connection went idle
	closed chan struct{}
	once   sync.Once

	reclaimed, refused atomic.Uint64
	// AtCap, when not nil, is called each time Accept finds every slot
	// taken and none idle, before it waits: a test's signal. Set it
	// before serving.
	AtCap func()
}

// NewListener wraps ln.
func NewListener(ln net.Listener, cfg Config) (*Listener, error) {
	if cfg.MaxConns <= 0 || cfg.MaxConnsPerAddr < 0 {
		return nil, fmt.Errorf("httpguard: MaxConns %d must be positive and MaxConnsPerAddr %d not negative", cfg.MaxConns, cfg.MaxConnsPerAddr)
	}
	if cfg.MaxConnsPerAddr == 0 {
		cfg.MaxConnsPerAddr = cfg.MaxConns
	}
	return &Listener{Listener: ln, max: cfg.MaxConns, perAddr: cfg.MaxConnsPerAddr,
		byAddr: map[netip.Addr]int{}, wake: make(chan struct{}, 1), closed: make(chan struct{})}, nil
}

// conn is one accepted connection; it gives its slot back once, when it
// is closed or reclaimed.
type conn struct {
	net.Conn
	l    *Listener
	addr netip.Addr
	elem *list.Element // in l.idle while idle; guarded by l.mu
	gone bool          // its slot is given back; guarded by l.mu
}

// Accept returns the next connection within the caps.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := Key(c.RemoteAddr().String())
		l.mu.Lock()
		if l.byAddr[key] >= l.perAddr {
			n := l.byAddr[key]
			l.mu.Unlock()
			l.refused.Add(1)
			refuse(c, n)
			continue
		}
		if !l.makeRoom() {
			l.mu.Unlock()
			c.Close()
			return nil, net.ErrClosed
		}
		l.open++
		l.byAddr[key]++
		l.mu.Unlock()
		return &conn{Conn: c, l: l, addr: key}, nil
	}
}

// makeRoom returns with l.open below the cap, closing idle connections
// or waiting for a slot, or false if the listener closed meanwhile. It
// is called with l.mu held and returns with it held.
func (l *Listener) makeRoom() bool {
	for l.open >= l.max {
		if e := l.idle.Front(); e != nil {
			victim := e.Value.(*conn)
			l.releaseLocked(victim)
			l.mu.Unlock()
			l.reclaimed.Add(1)
			victim.Conn.Close() // its server's goroutine sees the error and ends
			l.mu.Lock()
			continue
		}
		atCap := l.AtCap
		l.mu.Unlock()
		if atCap != nil {
			atCap()
		}
		select {
		case <-l.wake:
		case <-l.closed:
			l.mu.Lock()
			return false
		}
		l.mu.Lock()
	}
	return true
}

// refusing bounds the refusals being answered at once; past it a
// connection over its address's cap is closed unanswered.
var refusing = make(chan struct{}, 64)

// refuse answers a connection over its address's cap with HTTP 429 and
// closes it, off the accept loop. It reads the request's header first
// (16 KiB and 1 s at most): an answer that came before the request would
// confuse the client (Go's reads it as unsolicited), and closing with
// the request unread would reset the connection before the client saw
// the answer.
func refuse(c net.Conn, n int) {
	select {
	case refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		if _, err := http.ReadRequest(bufio.NewReader(io.LimitReader(c, 16<<10))); err != nil {
			return
		}
		body := fmt.Sprintf("too many connections from your address: %d open, the most allowed\n", n)
		fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}()
}

// releaseLocked gives c's slot back, once. l.mu is held.
func (l *Listener) releaseLocked(c *conn) {
	if c.gone {
		return
	}
	c.gone = true
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
	}
	l.open--
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
	l.signal()
}

func (l *Listener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return err
}

// ConnState is the http.Server's ConnState hook that tells the listener
// which connections are idle: new ones (nothing read yet) and keep-alive
// ones between requests. Any other hook must call it.
func (l *Listener) ConnState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*conn)
	if !ok || c.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.gone {
		return
	}
	switch st {
	case http.StateNew, http.StateIdle:
		if c.elem == nil {
			c.elem = l.idle.PushBack(c)
			l.signal()
		}
	case http.StateActive, http.StateHijacked:
		if c.elem != nil {
			l.idle.Remove(c.elem)
			c.elem = nil
		}
	case http.StateClosed:
		l.releaseLocked(c)
	}
}

// Close stops accepting; the connections open stay open.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Stats returns the listener's counts.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	return Stats{Open: open, Reclaimed: l.reclaimed.Load(), Refused: l.refused.Load()}
}
