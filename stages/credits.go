package stages

import "sync/atomic"

// Credits is a hop's budget of batches in flight: the upstream stage
// takes a credit before it sends a batch, the downstream stage gives it
// back once it is done with the message. When none is left the upstream
// stage drops the batch and counts its packets (packet.OutcomeNoCredits)
// rather than queue without bound: protoactor's mailboxes are unbounded,
// and its bounded mailbox busy-waits.
type Credits struct {
	free  atomic.Int64
	limit int64
}

// NewCredits returns a budget of n batches.
func NewCredits(n int) *Credits {
	c := &Credits{limit: int64(n)}
	c.free.Store(int64(n))
	return c
}

// TryAcquire takes a credit, or reports false if none is left.
func (c *Credits) TryAcquire() bool {
	for {
		f := c.free.Load()
		if f <= 0 {
			return false
		}
		if c.free.CompareAndSwap(f, f-1) {
			return true
		}
	}
}

// Release gives a credit back.
func (c *Credits) Release() {
	if c.free.Add(1) > c.limit {
		panic("stages: more credits released than taken")
	}
}

// Taken returns the credits taken and not given back.
func (c *Credits) Taken() int { return int(c.limit - c.free.Load()) }
