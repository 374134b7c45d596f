package packet

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

// Batch is up to Cap packets that move between stages together. It is
// reference counted: see the package doc for the ownership rules.
type Batch struct {
	pkts []Packet // len == capacity; only [:n] is in use
	n    int
	refs atomic.Int32
	seq  uint64 // assigned by Get, for tracing and leak reports
	pool *Pool

	cleanup runtime.Cleanup // armed while handed out (invariants build)
}

// Len returns the number of packets in the batch.
func (b *Batch) Len() int { return b.n }

// Cap returns the most packets the batch can hold.
func (b *Batch) Cap() int { return len(b.pkts) }

// Full reports whether Len == Cap.
func (b *Batch) Full() bool { return b.n == len(b.pkts) }

// Seq returns the batch's sequence number, unique per Pool.Get: it names
// this use of the batch in traces and leak reports.
func (b *Batch) Seq() uint64 { return b.seq }

// At returns packet i, 0 <= i < Len. The packet is valid while the caller
// owns a reference.
func (b *Batch) At(i int) *Packet {
	if uint(i) >= uint(b.n) {
		panic(fmt.Sprintf("packet: index %d out of range [0,%d)", i, b.n))
	}
	return &b.pkts[i]
}

// Packets returns the packets in use, valid while the caller owns a
// reference.
func (b *Batch) Packets() []Packet { return b.pkts[:b.n] }

// Next appends a packet with a zero Meta and returns it for the caller to
// fill, or nil when the batch is full. The caller must hold the sole
// reference.
func (b *Batch) Next() *Packet {
	if b.n == len(b.pkts) {
		return nil
	}
	p := &b.pkts[b.n]
	p.Meta = Meta{}
	b.n++
	return p
}

// Spare returns the packets not in use, for a receiver to fill in place
// (their Buffer, Meta) before Grow takes them in. The caller must hold the
// sole reference.
func (b *Batch) Spare() []Packet { return b.pkts[b.n:] }

// Grow adds the first k spare packets to the batch, as filled. The caller
// must hold the sole reference.
func (b *Batch) Grow(k int) {
	if k < 0 || b.n+k > len(b.pkts) {
		panic(fmt.Sprintf("packet: grow by %d with %d spare", k, len(b.pkts)-b.n))
	}
	b.n += k
}

// Truncate shrinks the batch to n packets (n <= Len), for example to drop
// a slot that a receive did not fill. The caller must hold the sole
// reference.
func (b *Batch) Truncate(n int) {
	if n < 0 || n > b.n {
		panic(fmt.Sprintf("packet: truncate to %d of %d", n, b.n))
	}
	b.n = n
}

// Refs returns the current reference count: for tests and assertions.
func (b *Batch) Refs() int32 { return b.refs.Load() }

// Retain adds a reference, to be released separately. The caller must own
// a reference already (it borrows b); Retain on a released batch is an
// invariant violation.
func (b *Batch) Retain() {
	if b.refs.Add(1) <= 1 {
		b.refs.Add(-1)
		b.pool.violation(b, "retain of a released batch")
	}
}

// Release drops one reference: it consumes the caller's reference. The
// last Release returns the batch to its pool; neither the batch nor any
// byte taken from it may be used afterwards.
func (b *Batch) Release() {
	switch r := b.refs.Add(-1); {
	case r == 0:
		b.pool.put(b)
	case r < 0:
		b.refs.Add(1) // leave the count at 0 for the pool
		b.pool.violation(b, "release of a released batch")
	}
}

// Clone returns a copy of b taken from b's pool, with one reference owned
// by the caller: every packet in use, its Meta (the parse result
// included) and its bytes, so that the copy's holder shares nothing with
// b's. It borrows b: the caller must own a reference, and no one may
// change b's packets while it runs. A copy is what the copy handoff pays
// per consumer instead of a Retain.
func (b *Batch) Clone() *Batch {
	c := b.pool.Get()
	for i := range b.pkts[:b.n] {
		src, dst := &b.pkts[i], &c.pkts[i]
		dst.Meta = src.Meta
		copy(dst.buf[:], src.buf[:src.Meta.Size])
	}
	c.n = b.n
	return c
}
