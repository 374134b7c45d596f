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

// TestClone: a clone holds the same packets (bytes and Meta, the parse
// result included) in buffers of its own, with its own reference, and
// outlives the original.
func TestClone(t *testing.T) {
	p := newPool(t, Config{BatchCap: 4})
	b := p.Get()
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	for i := 0; i < 3; i++ {
		pk := b.Next()
		pk.Fill([]byte{byte(i), 2, 3, byte(10 * i)})
		pk.Meta.Addr, pk.Meta.RecvNanos, pk.Meta.Flags = addr, int64(100+i), FlagTracer
		pk.Meta.Parsed[0], pk.Meta.Parsed[ParsedSize-1] = byte(i+1), 7
	}
	b.At(1).Discard(OutcomeDuplicate)
	c := b.Clone()
	if c == b || c.Len() != 3 || c.Refs() != 1 || b.Refs() != 1 || c.Seq() == b.Seq() {
		t.Fatalf("clone: len %d refs %d (original refs %d), seq %d vs %d", c.Len(), c.Refs(), b.Refs(), c.Seq(), b.Seq())
	}
	want := make([]Packet, 3)
	copy(want, b.Packets())
	for i := range want {
		if &c.At(i).Data()[0] == &b.At(i).Data()[0] {
			t.Fatalf("packet %d: the clone shares the original's buffer", i)
		}
	}
	b.Release() // poisons b in the invariants build
	for i := range want {
		if got := c.At(i); got.Meta != want[i].Meta || string(got.Data()) != string(want[i].Data()) {
			t.Errorf("packet %d: clone %+v %v, want %+v %v", i, got.Meta, got.Data(), want[i].Meta, want[i].Data())
		}
	}
	if s := p.Stats(); s.Live != 1 || s.Gets != 2 {
		t.Fatalf("after releasing the original: %+v", s)
	}
	c.Release()
	if s := p.Stats(); s.Live != 0 || s.DoubleReleases != 0 {
		t.Fatalf("after releasing the clone: %+v", s)
	}
}

// TestMetaParsedCleared: changing a packet's bytes through the package
// forgets their parse result.
func TestMetaParsedCleared(t *testing.T) {
	p := newPool(t, Config{BatchCap: 2})
	b := p.Get()
	defer b.Release()
	pk := b.Next()
	for _, change := range []struct {
		name string
		f    func()
	}{
		{"Fill", func() { pk.Fill([]byte("abc")) }},
		{"SetSize", func() { pk.SetSize(2) }},
	} {
		pk.Meta.Parsed[3] = 1
		change.f()
		if pk.Meta.Parsed != (Parsed{}) {
			t.Errorf("%s kept the parse result", change.name)
		}
	}
	b.Truncate(0)
	pk.Meta.Parsed[3] = 1
	if b.Next().Meta.Parsed != (Parsed{}) {
		t.Error("Next kept the parse result of the packet's last use")
	}
}

func TestCloneAllocs(t *testing.T) {
	if Invariants {
		t.Log("invariants build: allocation check applies to the plain build")
		return
	}
	p := newPool(t, Config{})
	b := p.Get()
	defer b.Release()
	for b.Next() != nil {
	}
	b.Clone().Release() // warm: one idle batch
	if a := testing.AllocsPerRun(1000, func() { b.Clone().Release() }); a != 0 {
		t.Fatalf("Clone/Release allocated %.1f times per run, want 0", a)
	}
}

// BenchmarkClone is the copy handoff's price per consumer against a
// Retain/Release, for a full batch of transfer-sized packets.
func BenchmarkClone(b *testing.B) {
	p := newPool(b, Config{})
	src := p.Get()
	defer src.Release()
	for pk := src.Next(); pk != nil; pk = src.Next() {
		pk.SetSize(215)
	}
	src.Clone().Release()
	b.Run("op=clone", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(src.Len() * 215))
		for b.Loop() {
			src.Clone().Release()
		}
	})
	b.Run("op=retain", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(src.Len() * 215))
		for b.Loop() {
			src.Retain()
			src.Release()
		}
	})
}

// Warm makes batches idle up to what it is asked and MaxIdle allow,
// counts them as allocated and warmed, and Get hands them out without
// allocating; a second Warm with enough idle makes none.
func TestPoolWarm(t *testing.T) {
	p := newPool(t, Config{BatchCap: 4, MaxIdle: 3})
	if n := p.Warm(5); n != 3 {
		t.Fatalf("Warm(5) with MaxIdle 3 made %d", n)
	}
	if s := p.Stats(); s.Allocs != 3 || s.Warmed != 3 || s.Idle != 3 || s.Live != 0 {
		t.Fatalf("after Warm: %+v", s)
	}
	if n := p.Warm(2); n != 0 {
		t.Fatalf("Warm(2) with 3 idle made %d", n)
	}
	a, b, c := p.Get(), p.Get(), p.Get()
	if s := p.Stats(); s.Allocs != 3 || s.Idle != 0 || s.Live != 3 {
		t.Fatalf("Get allocated with warmed batches idle: %+v", s)
	}
	for _, x := range []*Batch{a, b, c} {
		if x.Len() != 0 || x.Refs() != 1 || x.Cap() != 4 {
			t.Fatalf("warmed batch: len %d refs %d cap %d", x.Len(), x.Refs(), x.Cap())
		}
	}
	d := p.Get() // none idle: a new one
	if s := p.Stats(); s.Allocs != 4 || s.Warmed != 3 {
		t.Fatalf("after a fourth Get: %+v", s)
	}
	for _, x := range []*Batch{a, b, c, d} {
		x.Release()
	}
	if n := newPool(t, Config{MaxIdle: -1}).Warm(4); n != 0 {
		t.Fatalf("Warm with MaxIdle -1 (keep none) made %d", n)
	}
}
