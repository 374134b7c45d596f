package quic

import (
	"sync"
	"time"
)

// Stream credit goes back to a connection in batches. quic-go queues a
// MAX_STREAMS frame, and wakes the connection to send a packet, for
// every stream whose credit is released: released one stream at a time,
// that was most of the packets the server sent (docs/BENCHMARKS.md),
// and a sendmsg on loopback costs the sender the receiver's delivery
// too. So a connection's credits are held (creditBatch) until batch of
// them are, or for at most creditHold (creditSweep), whichever comes
// first.
//
// Holding them never leaves a client waiting on the server: a client
// may open (its limit - streams in flight - credits held) streams, and
// fewer than batch, a small part of the limit, are held. The sweep
// bounds how long held streams stay in quic-go's stream map.

// releaseBatch is the most credits a connection holds back at once;
// creditHold the longest it holds one.
const (
	releaseBatch = 16
	creditHold   = 50 * time.Millisecond
)

// creditor is a stream whose credit can be released:
// *quicgo.ReceiveStream.
type creditor interface{ ReleaseStreamCredit() }

// creditBatch is a connection's held credits.
type creditBatch struct {
	sweep *creditSweep
	batch int

	mu     sync.Mutex
	held   []creditor
	listed bool // on the sweep's list
}

// newCreditBatch returns the batching for a connection allowed limit
// concurrent streams, swept by w.
func newCreditBatch(limit int, w *creditSweep) *creditBatch {
	b := max(1, min(releaseBatch, limit/8))
	return &creditBatch{sweep: w, batch: b, held: make([]creditor, 0, b)}
}

// release releases str's credit, now or with the batch.
func (c *creditBatch) release(str creditor) {
	c.mu.Lock()
	c.held = append(c.held, str)
	list := false
	if len(c.held) >= c.batch {
		c.flush()
	} else if !c.listed {
		c.listed, list = true, true
	}
	c.mu.Unlock()
	if list {
		c.sweep.add(c)
	}
}

// swept releases every credit held.
func (c *creditBatch) swept() {
	c.mu.Lock()
	c.listed = false
	c.flush()
	c.mu.Unlock()
}

// flush releases the credits held. Called with mu held.
func (c *creditBatch) flush() {
	for i, h := range c.held {
		h.ReleaseStreamCredit()
		c.held[i] = nil
	}
	c.held = c.held[:0]
}

// creditSweep releases, creditHold after the first is listed, the
// credits of the connections listed: one timer for the server, armed
// only while some connection holds credits.
type creditSweep struct {
	mu          sync.Mutex
	list, spare []*creditBatch
	timer       *time.Timer
	armed       bool
	stopped     bool
}

func (w *creditSweep) init() {
	w.timer = time.AfterFunc(time.Hour, w.sweep)
	w.timer.Stop()
}

// add lists c, which holds credits.
func (w *creditSweep) add(c *creditBatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, c)
	if !w.armed && !w.stopped {
		w.armed = true
		w.timer.Reset(creditHold)
	}
}

// sweep releases the listed connections' credits.
func (w *creditSweep) sweep() {
	w.mu.Lock()
	l := w.list
	w.list, w.spare = w.spare[:0], nil
	w.armed = false
	w.mu.Unlock()
	for i, c := range l {
		c.swept()
		l[i] = nil
	}
	w.mu.Lock()
	w.spare = l[:0]
	w.mu.Unlock()
}

// stop ends the sweeps: the server is closed.
func (w *creditSweep) stop() {
	w.mu.Lock()
	w.stopped = true
	w.timer.Stop()
	w.mu.Unlock()
}
