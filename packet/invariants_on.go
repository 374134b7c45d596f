//go:build invariants

package packet

import "runtime"

// Invariants reports whether the invariants build tag is on.
const Invariants = true

// Poison is the byte written over every packet buffer of a released batch
// in the invariants build.
const Poison = 0xdb

// poisonSize is written to Meta.Size of released packets so that Data on a
// released packet panics instead of returning stale bytes.
const poisonSize = 0xffff

func poison(b *Batch) {
	for i := range b.pkts {
		p := &b.pkts[i]
		for j := range p.buf {
			p.buf[j] = Poison
		}
		p.Meta = Meta{Size: poisonSize, Flags: 0xff, Outcome: 0xff}
		for j := range p.Meta.Parsed {
			p.Meta.Parsed[j] = Poison
		}
	}
	b.n = 0
}

type leakArg struct {
	pool *Pool
	seq  uint64
}

func armLeakCheck(b *Batch) {
	b.cleanup = runtime.AddCleanup(b, func(a leakArg) { a.pool.leaked(a.seq) }, leakArg{b.pool, b.seq})
}

func disarmLeakCheck(b *Batch) {
	b.cleanup.Stop()
	b.cleanup = runtime.Cleanup{}
}
