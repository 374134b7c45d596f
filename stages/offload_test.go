package stages

import (
	"testing"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// fakeOffload is an Offload whose credits the test sets. TryStart takes
// a pass while a credit is free (unless refuse), and ends it at once,
// every packet left verified.
type fakeOffload struct {
	free, taken int
	refuse      bool
}

func (f *fakeOffload) Free() int { return f.free }
func (f *fakeOffload) TryStart(batches []*packet.Batch, _ trace.SpanContext, done func()) bool {
	if f.free == 0 || f.refuse {
		return false
	}
	f.taken++
	done()
	return true
}
func (f *fakeOffload) OnFree(func()) {}
func (f *fakeOffload) Wait()         {}

// With NoLocal (tpu run --sigverify-local=false) and no credit free on
// any verifier, a pass waits: nothing is checked here, the batches stay
// pending; once a credit is free the pass goes to Offload. A pass
// Offload refuses after all (too large for the wire) is checked here
// even so, its bad signature found.
func TestSigverifyNoLocalWaitsForCredits(t *testing.T) {
	s, pool, sent := newTestSigverify(t)
	defer s.verifier.Close()
	off := &fakeOffload{}
	s.cfg.Offload, s.cfg.NoLocal = off, true
	done := make(chan passDoneMsg, 4)
	s.self = func(m any) { done <- m.(passDoneMsg) }

	receive(t, s, pool, 0, 8, false)
	if s.canStart() {
		t.Fatal("canStart with no credit and no local checks")
	}
	s.startPass()
	if len(s.passes) != 0 || len(s.pending) != 1 || s.local != 0 || off.taken != 0 {
		t.Fatalf("%d passes, %d pending, %d local, %d offloaded: want the batch to wait", len(s.passes), len(s.pending), s.local, off.taken)
	}

	off.free = 1
	if !s.canStart() {
		t.Fatal("a credit is free, but canStart says no")
	}
	s.startPass()
	if off.taken != 1 || s.local != 0 || len(s.pending) != 0 {
		t.Fatalf("%d offloaded, %d local, %d pending: want the pass offloaded", off.taken, s.local, len(s.pending))
	}
	s.passDone((<-done).pass)

	off.refuse = true
	receive(t, s, pool, 8, 8, true)
	s.startPass()
	if off.taken != 1 || s.local != 1 {
		t.Fatalf("%d offloaded, %d local: want the refused pass checked here", off.taken, s.local)
	}
	s.passDone((<-done).pass)
	if len(*sent) != 2 || s.counts.snapshot()[packet.OutcomeBadSignature] != 1 || s.forwarded.Load() != 15 {
		t.Fatalf("%d batches sent, %d bad signatures, %d forwarded: want 2, 1, 15", len(*sent), s.counts.snapshot()[packet.OutcomeBadSignature], s.forwarded.Load())
	}
	for _, m := range *sent {
		m.Batch.Release()
	}
}

// holdOffload takes every pass and holds it until the test ends it.
type holdOffload struct{ done []func() }

func (h *holdOffload) Free() int { return 1 }
func (h *holdOffload) TryStart(_ []*packet.Batch, _ trace.SpanContext, done func()) bool {
	h.done = append(h.done, done)
	return true
}
func (h *holdOffload) OnFree(func()) {}
func (h *holdOffload) Wait()         {}

// A pass under way counts its packets as being checked, no longer as
// waiting for a pass (Graph.Accepting's closed loop), until it ends and
// they count as done: a leader whose passes are checked elsewhere may
// have one in flight while the next fills, rather than wait for each
// to come back.
func TestSigverifyCountsPassesUnderWay(t *testing.T) {
	s, pool, sent := newTestSigverify(t)
	defer s.verifier.Close()
	off := &holdOffload{}
	s.cfg.Offload = off
	done := make(chan passDoneMsg, 4)
	s.self = func(m any) { done <- m.(passDoneMsg) }

	receive(t, s, pool, 0, 8, false)
	receive(t, s, pool, 8, 5, true)
	s.startPass()
	if got := s.checking.Load(); got != 13 || s.done.Load() != 0 {
		t.Fatalf("one pass of 13 packets under way: checking %d, done %d", got, s.done.Load())
	}
	receive(t, s, pool, 13, 8, false)
	s.startPass()
	if got := s.checking.Load(); got != 21 {
		t.Fatalf("two passes under way: checking %d, want 21", got)
	}
	off.done[0]()
	s.passDone((<-done).pass)
	if got, d := s.checking.Load(), s.done.Load(); got != 8 || d != 13 {
		t.Fatalf("the first pass ended: checking %d, done %d; want 8, 13", got, d)
	}
	off.done[1]()
	s.passDone((<-done).pass)
	if got, d := s.checking.Load(), s.done.Load(); got != 0 || d != 21 {
		t.Fatalf("both ended: checking %d, done %d; want 0, 21", got, d)
	}
	for _, m := range *sent {
		m.Batch.Release()
	}
}
