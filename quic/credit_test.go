package quic

import (
	"context"
	"testing"
	"time"
)

// fakeStream counts its credit releases.
type fakeStream struct{ released int }

func (f *fakeStream) ReleaseStreamCredit() { f.released++ }

// TestCreditBatch: credits are held until a batch is, or until no
// stream is in flight; a withheld stream's credit is never released; the
// batch is a small part of a small limit.
func TestCreditBatch(t *testing.T) {
	c := newCreditBatch(128)
	if c.batch != releaseBatch {
		t.Fatalf("batch %d at limit 128", c.batch)
	}
	a, b, w := &fakeStream{}, &fakeStream{}, &fakeStream{}
	c.begin()
	c.begin()
	c.begin()
	c.done(a, true)
	c.done(w, false) // withheld
	if a.released != 0 {
		t.Fatal("released with a stream still in flight and no batch held")
	}
	c.done(b, true) // the last in flight
	if a.released != 1 || b.released != 1 || w.released != 0 {
		t.Fatalf("after the last stream: released %d %d, withheld %d", a.released, b.released, w.released)
	}

	// A stream in flight for good (stalled): the others' credits go
	// back a batch at a time.
	c.begin()
	var s [2 * releaseBatch]fakeStream
	for i := range s {
		c.begin()
		c.done(&s[i], true)
		first, second := 0, 0 // releases due to s[0] and s[releaseBatch]
		if i >= releaseBatch-1 {
			first = 1
		}
		if i >= 2*releaseBatch-1 {
			second = 1
		}
		if s[0].released != first || s[releaseBatch].released != second {
			t.Fatalf("after %d streams done: released %d and %d times, want %d and %d",
				i+1, s[0].released, s[releaseBatch].released, first, second)
		}
	}
	for i := range s {
		if s[i].released != 1 {
			t.Fatalf("stream %d released %d times", i, s[i].released)
		}
	}

	for _, lim := range []struct{ limit, batch int }{{1, 1}, {8, 1}, {16, 2}, {64, 8}, {512, releaseBatch}} {
		if got := newCreditBatch(lim.limit).batch; got != lim.batch {
			t.Errorf("limit %d: batch %d, want %d", lim.limit, got, lim.batch)
		}
	}
}

// TestCreditWithStalledStream: a client with one stream stalled (not
// FINed, and the stream timeout far off) keeps sending: the streams it
// finishes give their credit back in batches though one is in flight.
// Were credit released only when nothing is in flight, the client would
// run out of streams after its limit.
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
