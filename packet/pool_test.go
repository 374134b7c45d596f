package packet

import (
	"net/netip"
	"sync"
	"testing"
)

func newPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	p, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{BatchCap: 1}, true},
		{Config{BatchCap: MaxBatchCap}, true},
		{Config{BatchCap: MaxBatchCap + 1}, false},
		{Config{BatchCap: -1}, false},
		{Config{MaxIdle: -1}, true},
	} {
		_, err := NewPool(c.cfg)
		if (err == nil) != c.ok {
			t.Errorf("NewPool(%+v) = %v, want ok=%v", c.cfg, err, c.ok)
		}
	}
}

func TestBatchFillAndAccess(t *testing.T) {
	p := newPool(t, Config{BatchCap: 3})
	b := p.Get()
	if b.Len() != 0 || b.Cap() != 3 || b.Refs() != 1 {
		t.Fatalf("fresh batch: len %d cap %d refs %d", b.Len(), b.Cap(), b.Refs())
	}
	addr := netip.MustParseAddrPort("127.0.0.1:8003")
	for i := 0; i < 3; i++ {
		pk := b.Next()
		if pk == nil {
			t.Fatalf("Next returned nil at %d", i)
		}
		if !pk.Fill([]byte{byte(i), 1, 2}) {
			t.Fatal("Fill of 3 bytes failed")
		}
		pk.Meta.Addr = addr
	}
	if b.Next() != nil || !b.Full() {
		t.Fatal("Next on a full batch should return nil")
	}
	for i := 0; i < b.Len(); i++ {
		if d := b.At(i).Data(); len(d) != 3 || d[0] != byte(i) {
			t.Errorf("packet %d data %v", i, d)
		}
	}
	if len(b.Packets()) != 3 {
		t.Errorf("Packets len %d", len(b.Packets()))
	}
	b.Truncate(1)
	if b.Len() != 1 {
		t.Errorf("Truncate: len %d", b.Len())
	}
	b.Release()
}

func TestPacketFillOversize(t *testing.T) {
	var pk Packet
	if pk.Fill(make([]byte, Size+1)) {
		t.Fatal("Fill accepted more than Size bytes")
	}
	if !pk.Fill(make([]byte, Size)) || len(pk.Data()) != Size {
		t.Fatal("Fill of exactly Size bytes failed")
	}
	pk.SetSize(Size + 10)
	if len(pk.Data()) != Size {
		t.Fatal("SetSize did not clamp")
	}
}

func TestDiscardFirstOutcomeWins(t *testing.T) {
	var pk Packet
	pk.Discard(OutcomeDuplicate)
	pk.Discard(OutcomeBadSignature)
	if !pk.Discarded() || pk.Meta.Outcome != OutcomeDuplicate {
		t.Fatalf("outcome %v discarded %v", pk.Meta.Outcome, pk.Discarded())
	}
}

func TestOutcomeNames(t *testing.T) {
	seen := map[string]bool{}
	for o := Outcome(0); o < NumOutcomes; o++ {
		n := o.String()
		if n == "" || n == "unknown" || seen[n] {
			t.Errorf("outcome %d has bad or repeated name %q", o, n)
		}
		seen[n] = true
		if back, ok := ParseOutcome(n); !ok || back != o {
			t.Errorf("ParseOutcome(%q) = %v %v", n, back, ok)
		}
	}
	if len(Terminal()) != int(NumOutcomes)-1 {
		t.Errorf("Terminal has %d outcomes", len(Terminal()))
	}
}

func TestPoolRecyclesAndCounts(t *testing.T) {
	p := newPool(t, Config{BatchCap: 4, MaxIdle: 2})
	a, b, c := p.Get(), p.Get(), p.Get()
	if s := p.Stats(); s.Gets != 3 || s.Allocs != 3 || s.Live != 3 || s.Idle != 0 {
		t.Fatalf("after 3 gets: %+v", s)
	}
	if a.Seq() == b.Seq() || b.Seq() == c.Seq() {
		t.Fatal("sequence numbers repeat")
	}
	a.Release()
	b.Release()
	c.Release() // beyond MaxIdle: dropped
	s := p.Stats()
	if s.Puts != 3 || s.Live != 0 || s.Idle != 2 || s.Dropped != 1 {
		t.Fatalf("after 3 releases: %+v", s)
	}
	d := p.Get()
	if s := p.Stats(); s.Allocs != 3 || s.Idle != 1 || s.Live != 1 {
		t.Fatalf("Get did not reuse an idle batch: %+v", s)
	}
	if d.Len() != 0 || d.Refs() != 1 {
		t.Fatalf("reused batch not reset: len %d refs %d", d.Len(), d.Refs())
	}
	d.Release()
	// Three were out at once, never more; new gets below that keep it.
	e, f := p.Get(), p.Get()
	if s := p.Stats(); s.Peak != 3 || s.Live != 2 {
		t.Fatalf("peak after 3 out, then 2: %+v", s)
	}
	g, h := p.Get(), p.Get()
	if s := p.Stats(); s.Peak != 4 {
		t.Fatalf("peak after 4 out: %+v", s)
	}
	for _, b := range []*Batch{e, f, g, h} {
		b.Release()
	}
}

func TestRetainRelease(t *testing.T) {
	p := newPool(t, Config{BatchCap: 1})
	b := p.Get()
	b.Retain()
	b.Retain()
	if b.Refs() != 3 {
		t.Fatalf("refs %d", b.Refs())
	}
	b.Release()
	b.Release()
	if s := p.Stats(); s.Live != 1 {
		t.Fatalf("returned before the last release: %+v", s)
	}
	b.Release()
	if s := p.Stats(); s.Live != 0 || s.Puts != 1 {
		t.Fatalf("last release did not return the batch: %+v", s)
	}
}

// TestConcurrentRelease fans one batch out to many goroutines; exactly one
// release returns it.
func TestConcurrentRelease(t *testing.T) {
	p := newPool(t, Config{BatchCap: 2})
	for round := 0; round < 50; round++ {
		b := p.Get()
		b.Next().Fill([]byte("x"))
		const n = 8
		for i := 1; i < n; i++ {
			b.Retain()
		}
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = b.At(0).Data()[0]
				b.Release()
			}()
		}
		wg.Wait()
	}
	if s := p.Stats(); s.Live != 0 || s.Puts != 50 || s.DoubleReleases != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestGetReleaseAllocs(t *testing.T) {
	if Invariants {
		// The invariants build arms a leak check (runtime.AddCleanup) on
		// every Get, which allocates by design; the claim is about the
		// production build, which this test checks in the plain run.
		t.Log("invariants build: allocation check applies to the plain build")
		return
	}
	p := newPool(t, Config{})
	p.Get().Release() // warm: one idle batch
	allocs := testing.AllocsPerRun(1000, func() {
		b := p.Get()
		b.Next().Meta.Size = 1
		b.Retain()
		b.Release()
		b.Release()
	})
	if allocs != 0 {
		t.Fatalf("Get/Retain/Release allocated %.1f times per run, want 0", allocs)
	}
}

func BenchmarkPool(b *testing.B) {
	p := newPool(b, Config{})
	p.Get().Release()
	b.ReportAllocs()
	b.Run("op=get-release", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.Get().Release()
		}
	})
	b.Run("op=get-release/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.Get().Release()
			}
		})
	})
}
