package quic

import (
	"context"
	"testing"
	"time"
)

// fakeStream counts its credit releases.
type fakeStream struct{ released int }

func (f *fakeStream) ReleaseStreamCredit() { f.released++ }

// TestCreditBatch: credits are held until a batch is, then released
// together; the sweep releases what is held short of a batch; the batch
// is a small part of a small limit.
func TestCreditBatch(t *testing.T) {
	var w creditSweep
	w.init()
	w.stop() // the test sweeps by hand
	c := newCreditBatch(128, &w)
	if c.batch != releaseBatch {
		t.Fatalf("batch %d at limit 128", c.batch)
	}
	var s [2*releaseBatch + 3]fakeStream
	for i := range s {
		c.release(&s[i])
		first, second := 0, 0 // releases of s[0] and s[releaseBatch]
		if i >= releaseBatch-1 {
			first = 1
		}
		if i >= 2*releaseBatch-1 {
			second = 1
		}
		if s[0].released != first || s[releaseBatch].released != second {
			t.Fatalf("after %d streams: released %d and %d times, want %d and %d",
				i+1, s[0].released, s[releaseBatch].released, first, second)
		}
	}
	if last := &s[len(s)-1]; last.released != 0 || len(w.list) != 1 {
		t.Fatalf("short of a batch: released %d, %d listed", last.released, len(w.list))
	}
	w.sweep()
	for i := range s {
		if s[i].released != 1 {
			t.Fatalf("stream %d released %d times", i, s[i].released)
		}
	}
	if len(w.list) != 0 || c.listed {
		t.Fatal("still listed after the sweep")
	}
	c.release(&s[0]) // listed again
	if len(w.list) != 1 {
		t.Fatalf("%d listed", len(w.list))
	}

	for _, lim := range []struct{ limit, batch int }{{1, 1}, {8, 1}, {16, 2}, {64, 8}, {512, releaseBatch}} {
		if got := newCreditBatch(lim.limit, &w).batch; got != lim.batch {
			t.Errorf("limit %d: batch %d, want %d", lim.limit, got, lim.batch)
		}
	}
}

// TestCreditSwept: credits held short of a batch come back within
// creditHold though the connection sends nothing more. The client
// sends 3 streams (held: the batch is 4 at a limit of 32), then opens
// streams without sending on them until it has no credit left: 29
// (then only the sweep's release lets it open another), or 32 if the
// sweep already ran.
func TestCreditSwept(t *testing.T) {
	s, k := startServer(t, Config{Limits: Limits{MinStreams: 32, MaxStreams: 32}})
	c := dial(t, s, nil)
	for i := range 3 {
		send(t, c, tx(i, 50))
	}
	waitFor(t, "3 packets", func() bool { return k.len() == 3 })
	opened := 0
	for ; opened < 40; opened++ {
		if _, err := c.Raw().OpenUniStream(); err != nil {
			break
		}
	}
	switch opened {
	case 32: // the sweep released the 3 before the client ran out
		return
	case 29:
	default:
		t.Fatalf("opened %d streams on 32 credits, 3 of them held or swept", opened)
	}
	waitFor(t, "a credit released", func() bool {
		_, err := c.Raw().OpenUniStream()
		return err == nil
	})
}

// TestCreditWithStalledStream: a client with one stream stalled (not
// FINed, and the stream timeout far off) keeps sending: the streams it
// finishes give their credit back though one is in flight, never to be
// read. Were credit held while any stream is in flight, the client
// would run out of streams after its limit.
func TestCreditWithStalledStream(t *testing.T) {
	s, k := startServer(t, Config{StreamTimeout: time.Minute, Limits: Limits{MinStreams: 32, MaxStreams: 32}})
	c := dial(t, s, nil)
	str, err := c.Raw().OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Write(tx(1, 100)[:50]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	const n = 100 // 3 times the limit
	for i := range n {
		if err := c.Send(ctx, tx(i, 50)); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	waitFor(t, "the streams sent", func() bool { return k.len() == n })
	str.Write(tx(1, 100)[50:])
	str.Close()
	waitFor(t, "the stalled stream", func() bool { return k.len() == n+1 })
}
