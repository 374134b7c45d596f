package stages

import (
	"context"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/txview"
)

// newTestSigverify returns a sigverify stage outside an actor, whose
// forwarded batches go to sent and whose messages to itself are counted.
func newTestSigverify(t *testing.T) (s *sigverifyStage, pool *packet.Pool, sent *[]*BatchMsg) {
	t.Helper()
	v, err := sigverify.NewVerifier(sigverify.VerifyConfig{Workers: 2, MinTaskSignatures: 1})
	if err != nil {
		t.Fatal(err)
	}
	d, err := sigverify.NewDeduper(sigverify.DedupConfig{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	prov, err := trace.Setup(context.Background(), trace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	pool, _ = packet.NewPool(packet.Config{BatchCap: 8})
	sent = new([]*BatchMsg)
	s = &sigverifyStage{
		cfg: SigverifyConfig{}.withDefaults(), verifier: v, dedup: d,
		upstream: NewCredits(64), credits: NewCredits(64), hop: prov.Hop("sigverify"), prov: prov,
		send: func(m *BatchMsg) { *sent = append(*sent, m) },
		self: func(any) {},
	}
	return s, pool, sent
}

// receive queues a batch of n transfers as fetch would send it, the last
// one with a bad signature when bad is set.
func receive(t *testing.T, s *sigverifyStage, pool *packet.Pool, first, n int, bad bool) *packet.Batch {
	t.Helper()
	if !s.upstream.TryAcquire() {
		t.Fatal("fetch's budget is used up")
	}
	b := pool.Get()
	for i := first; i < first+n; i++ {
		var seed [32]byte
		seed[0], seed[1] = byte(i), byte(i>>8)
		k := ed25519.NewKeyFromSeed(seed[:])
		m := txview.Message{Payer: txview.PublicKey(k), Blockhash: [32]byte{9},
			Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(k), [32]byte{7}, uint64(i)+1)}}
		tx, err := m.Sign(k)
		if err != nil {
			t.Fatal(err)
		}
		if bad && i == first+n-1 {
			tx[1] ^= 1
		}
		b.Next().Fill(tx)
	}
	m := &BatchMsg{Batch: b, Sent: packet.Now()}
	s.pending = append(s.pending, m)
	s.spans = append(s.spans, s.hop.Start(m.Span, m.Sent, false))
	return b
}

// A stop without a drain (a flush that timed out) finds passes under way
// and batches pending: it waits for the passes and drops the rest with
// outcome shutdown, so every packet is counted and every batch goes back
// to the pool, and fetch gets all its credits back.
func TestSigverifyShutdownDropsWhatIsLeft(t *testing.T) {
	s, pool, sent := newTestSigverify(t)
	receive(t, s, pool, 0, 8, true)
	receive(t, s, pool, 8, 8, false)
	s.startPass()
	receive(t, s, pool, 16, 8, true)
	s.startPass()
	receive(t, s, pool, 24, 5, false) // both passes under way: stays pending
	s.startPass()
	if len(s.passes) != sigverify.MaxPasses || len(s.pending) != 1 {
		t.Fatalf("%d passes under way, %d batches pending; want %d and 1", len(s.passes), len(s.pending), sigverify.MaxPasses)
	}
	s.shutdown()
	counts := s.counts.snapshot()
	if counts[packet.OutcomeBadSignature] != 2 || counts[packet.OutcomeShutdown] != 27 {
		t.Fatalf("bad signature %d, shutdown %d; want 2 and 27", counts[packet.OutcomeBadSignature], counts[packet.OutcomeShutdown])
	}
	if len(*sent) != 0 || s.done.Load() != 29 || s.upstream.Taken() != 0 {
		t.Fatalf("%d batches sent, %d packets done, %d fetch credits out; want 0, 29, 0", len(*sent), s.done.Load(), s.upstream.Taken())
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches still out of the pool", live)
	}
}

// Passes leave in the order they started, even when a later, smaller one
// finishes first.
func TestSigverifyPassesLeaveInOrder(t *testing.T) {
	s, pool, sent := newTestSigverify(t)
	done := make(chan *svPass, sigverify.MaxPasses)
	s.self = func(m any) { done <- m.(passDoneMsg).pass }
	order := []*packet.Batch{receive(t, s, pool, 0, 8, false), receive(t, s, pool, 8, 8, false)}
	s.startPass()
	order = append(order, receive(t, s, pool, 16, 1, false))
	s.startPass()
	first, second := s.passes[0], s.passes[1]
	// Hand the stage the second pass's completion first, as if it had
	// finished first: nothing may leave until the first is done too.
	got := [2]*svPass{<-done, <-done}
	for _, p := range []*svPass{second, first} {
		if got[0] != p && got[1] != p {
			t.Fatal("a pass never finished")
		}
		s.passDone(p)
		if p == second && len(*sent) != 0 {
			t.Fatalf("%d batches left before the first pass was done", len(*sent))
		}
	}
	if len(*sent) != 3 {
		t.Fatalf("%d batches sent, want 3", len(*sent))
	}
	for i, m := range *sent {
		if m.Batch != order[i] {
			t.Fatalf("batch %d sent out of order", i)
		}
		m.Batch.Release()
	}
	s.verifier.Close()
}
