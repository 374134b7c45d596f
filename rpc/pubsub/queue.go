package pubsub

import (
	"context"
	"sync"
	"sync/atomic"
)

// conn is one websocket connection as the registry sees it: a queue of
// messages to write, bounded in messages (the channel's capacity) and
// in bytes (maxBytes).
type conn struct {
	out      chan outMsg
	maxBytes int64
	pool     *queues // the server's, bounding all queues together; nil: no such bound
	cancel   context.CancelFunc
	stats    *stats
	stopped  atomic.Bool

	// qmu guards queued and discarded, and orders queueing against
	// discard, so that stats.queued gets back exactly what was added.
	qmu       sync.Mutex
	queued    int64 // bytes of the messages queued and not yet written
	discarded bool  // the connection is gone: what it held is given back
}

// outMsg is a message queued to a connection: b whole, or, for a
// notification (id not 0), b the head the writer completes with the
// subscription id (appendNotification). sent, for a notification, is
// the counter the writer adds it to before writing it.
type outMsg struct {
	b    []byte
	id   uint64
	sent *atomic.Uint64
}

// size is the bytes m counts for in its connection's queue: what it
// writes, at most. A head shared with other notifications counts in
// full in each: the bound is on what the client must read.
func (m outMsg) size() int64 {
	if m.id != 0 {
		return int64(len(m.b) + notificationTail)
	}
	return int64(len(m.b))
}

// send queues msg without blocking; a full queue stops the connection
// (a slow reader) rather than buffer without limit.
func (c *conn) send(msg []byte) bool { return c.queue(outMsg{b: msg}) }

// notify queues a notification, to be counted in sent when it is
// written.
func (c *conn) notify(head []byte, id uint64, sent *atomic.Uint64) bool {
	return c.queue(outMsg{b: head, id: id, sent: sent})
}

// queue queues m unless the connection would then hold more than its
// messages or bytes (a message that finds no bytes queued is taken
// whatever its size); past either it stops the connection as a slow
// reader. Where all the queues together would pass MaxQueueBytes, it
// first stops the heaviest connections (queues.makeRoom), which may be
// this one.
func (c *conn) queue(m outMsg) bool {
	if c.stopped.Load() {
		return false
	}
	n := m.size()
	if c.pool != nil {
		c.pool.mu.Lock()
		defer c.pool.mu.Unlock()
		c.pool.makeRoom(n)
	}
	c.qmu.Lock()
	if c.discarded {
		c.qmu.Unlock()
		return false
	}
	if c.queued > 0 && c.queued+n > c.maxBytes {
		c.qmu.Unlock()
		c.stop(&c.stats.slowReaders)
		return false
	}
	select {
	case c.out <- m:
		c.queued += n
		c.stats.queued.Add(n)
		c.qmu.Unlock()
		return true
	default:
		c.qmu.Unlock()
		c.stop(&c.stats.slowReaders)
		return false
	}
}

// queues is the set of a server's connections, for the bound on their
// queues together (Config.MaxQueueBytes).
type queues struct {
	max   int64
	stats *stats

	mu    sync.Mutex // held across a queue's check and its add
	conns map[*conn]struct{}
}

func (q *queues) join(c *conn) {
	q.mu.Lock()
	q.conns[c] = struct{}{}
	q.mu.Unlock()
}

// leave gives back what c still held, once it is gone.
func (q *queues) leave(c *conn) {
	q.mu.Lock()
	delete(q.conns, c)
	q.mu.Unlock()
	c.discard()
}

// makeRoom stops the connections with the most bytes queued, heaviest
// first, until n more fit under max or nothing is queued anywhere. Each
// is counted as server_queue_full and gives its bytes back at once. q.mu
// is held. A linear pass per connection stopped: at most MaxConns
// connections, and each stop frees a queue's worth.
func (q *queues) makeRoom(n int64) {
	for q.stats.queued.Load()+n > q.max {
		var heaviest *conn
		var most int64
		for c := range q.conns {
			if b := c.queuedBytes(); b > most {
				heaviest, most = c, b
			}
		}
		if heaviest == nil {
			return
		}
		heaviest.stop(&q.stats.serverQueueFull)
		heaviest.discard()
	}
}

// written gives back the n bytes of a message written (or failed).
func (c *conn) written(n int64) {
	c.qmu.Lock()
	if !c.discarded {
		c.queued -= n
		c.stats.queued.Add(-n)
	}
	c.qmu.Unlock()
}

// discard gives back the bytes of the messages the connection will never
// write, once it is stopped; nothing is queued to it after. Later calls
// do nothing.
func (c *conn) discard() {
	c.qmu.Lock()
	c.discarded = true
	c.stats.queued.Add(-c.queued)
	c.queued = 0
	c.qmu.Unlock()
}

// queuedBytes returns the bytes queued to c and not yet written.
func (c *conn) queuedBytes() int64 {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return c.queued
}

// stop ends the connection, counting why in reason (nil: the client
// left, or the server is closing). It never blocks.
func (c *conn) stop(reason *atomic.Uint64) {
	if c.stopped.CompareAndSwap(false, true) {
		if reason != nil {
			reason.Add(1)
		}
		c.cancel()
	}
}
