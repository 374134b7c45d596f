//go:build invariants

package packet

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
)

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
	pcs  [8]uintptr // where Get was called: the report names it
}

func armLeakCheck(b *Batch) {
	a := leakArg{pool: b.pool, seq: b.seq}
	runtime.Callers(3, a.pcs[:]) // above armLeakCheck and Get
	b.cleanup = runtime.AddCleanup(b, func(a leakArg) { a.pool.leaked(a.seq, callers(a.pcs[:])) }, a)
}

// callers formats pcs as "function (file:line)" frames, innermost
// first.
func callers(pcs []uintptr) string {
	var sb strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function != "" {
			if sb.Len() > 0 {
				sb.WriteString(" <- ")
			}
			fmt.Fprintf(&sb, "%s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return sb.String()
		}
	}
}

func disarmLeakCheck(b *Batch) {
	b.cleanup.Stop()
	b.cleanup = runtime.Cleanup{}
}

// leaked reports a leak, naming where the batch was taken from the pool,
// then counts it: whoever sees the count sees the report already made.
func (p *Pool) leaked(seq uint64, gotAt string) {
	msg := fmt.Sprintf("packet: batch seq %d was garbage-collected while still referenced (leak); taken by %s", seq, gotAt)
	if p.cfg.LeakHook != nil {
		p.cfg.LeakHook(msg)
	} else {
		slog.Error(msg)
		loggedLeaks.Add(1)
	}
	p.leaks.Add(1)
}
