package stages

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

var (
	heavyIP = netip.MustParseAddrPort("127.0.0.2:4000")
	lightIP = netip.MustParseAddrPort("127.0.0.3:5000")
)

// batchFrom returns a batch of one packet per address in from, each
// packet's bytes naming its index.
func batchFrom(pool *packet.Pool, from ...netip.AddrPort) *packet.Batch {
	b := pool.Get()
	for i, a := range from {
		p := b.Next()
		p.Fill([]byte{byte(i), 0xaa, byte(i)})
		p.Meta.Addr = a
		p.Meta.RecvNanos = int64(1000 + i)
	}
	return b
}

func repeat(a netip.AddrPort, n int) []netip.AddrPort {
	out := make([]netip.AddrPort, n)
	for i := range out {
		out[i] = a
	}
	return out
}

// A source is light while it sent less than an equal share of the
// window's packets; the heaviest never is, nor one source alone, nor
// sources with equal shares; packets that leave the window stop
// counting.
func TestFairShareLight(t *testing.T) {
	pool, _ := packet.NewPool(packet.Config{BatchCap: 8})
	heavy, light := sourceOf(&packet.Packet{Meta: packet.Meta{Addr: heavyIP}}), sourceOf(&packet.Packet{Meta: packet.Meta{Addr: lightIP}})
	w := newFairShare(8)
	observe := func(from ...netip.AddrPort) {
		b := batchFrom(pool, from...)
		w.observe(b)
		b.Release()
	}

	observe(repeat(heavyIP, 4)...)
	if w.light(heavy) {
		t.Error("one source alone is light")
	}
	if !w.light(light) {
		t.Error("a source not in the window is not light")
	}
	observe(repeat(lightIP, 4)...) // 4 and 4: equal shares
	if w.light(heavy) || w.light(light) {
		t.Errorf("equal shares: heavy light %v, light light %v; want neither", w.light(heavy), w.light(light))
	}
	observe(repeat(heavyIP, 6)...) // the oldest 6 leave: 6 heavy, 2 light
	if w.light(heavy) || !w.light(light) {
		t.Errorf("6 against 2: heavy light %v, light light %v; want only the light one", w.light(heavy), w.light(light))
	}
	if w.counts[heavy] != 6 || w.counts[light] != 2 {
		t.Errorf("counts %v, want heavy 6, light 2 (the oldest 6 left the window)", w.counts)
	}
	observe(repeat(heavyIP, 2)...) // the last light packets leave the window
	if len(w.counts) != 1 || w.counts[heavy] != 8 {
		t.Errorf("counts %v, want only heavy, 8", w.counts)
	}
	// Another port of the same IP, and its IPv4-mapped IPv6 form, are
	// the same source.
	observe(netip.MustParseAddrPort("127.0.0.3:1"), netip.MustParseAddrPort("[::ffff:127.0.0.3]:2"))
	if w.counts[light] != 2 || len(w.counts) != 2 {
		t.Errorf("counts %v, want the light source at 2 from two ports and both address forms", w.counts)
	}
}

// newTestFetcher returns a fetcher outside an actor with no credits,
// whose forwarded batches go to sent and whose retry timer's messages
// are counted.
func newTestFetcher(t *testing.T, batchCap int) (f *fetcher, sent *[]*BatchMsg, retries *int) {
	t.Helper()
	prov, err := trace.Setup(context.Background(), trace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := packet.NewPool(packet.Config{BatchCap: batchCap})
	if err != nil {
		t.Fatal(err)
	}
	sent, retries = new([]*BatchMsg), new(int)
	f = &fetcher{
		cfg: FetchConfig{Coalesce: 1 << 40}.withDefaults(), pool: pool, credits: NewCredits(1), hop: prov.Hop("fetch"),
		sigverify: func(m *BatchMsg) { *sent = append(*sent, m) }, toActor: func(any) { *retries++ },
		fair: newFairShare(64),
	}
	if !f.credits.TryAcquire() {
		t.Fatal("no credit to take")
	}
	t.Cleanup(func() {
		if f.retry != nil {
			f.retry.Stop()
		}
	})
	return f, sent, retries
}

func read(f *fetcher, from ...netip.AddrPort) *readMsg {
	b := batchFrom(f.pool, from...)
	return &readMsg{Batch: b, Span: f.hop.Start(trace.SpanContext{}, 0, false)}
}

// A batch without a credit keeps its light sources' packets, bytes and
// Meta, in the spare batch, and drops the heavy source's, counted; the
// spare batch goes first once a credit comes back, ahead of the batch
// that finds it; what it has no room for is dropped, counted; a spare
// batch left at a stop is dropped, counted. Every packet read has one
// fate: sent, or no_credits.
func TestFetchShedSparesLightSources(t *testing.T) {
	f, sent, _ := newTestFetcher(t, 4)
	f.forward(read(f, repeat(heavyIP, 4)...)) // fills the window: 4 heavy
	f.forward(read(f, heavyIP, lightIP, heavyIP, heavyIP))
	if got := f.noCredits.Load(); got != 7 {
		t.Fatalf("no_credits %d, want the heavy source's 7", got)
	}
	if got := f.spared.Load(); got != 1 || f.spare == nil || f.spare.Len() != 1 {
		t.Fatalf("spared %d, spare batch %v; want the light packet, in it", got, f.spare)
	}
	p := f.spare.At(0)
	if p.Meta.Addr != lightIP || p.Meta.RecvNanos != 1001 || !bytes.Equal(p.Data(), []byte{1, 0xaa, 1}) {
		t.Fatalf("spared packet %+v %x, want the light one's Meta and bytes", p.Meta, p.Data())
	}
	if !f.retrying || f.retry == nil {
		t.Fatal("no retry armed for the spare batch")
	}
	if len(*sent) != 0 {
		t.Fatalf("%d batches sent with no credit", len(*sent))
	}

	// The spare batch fills up (capacity 4): the light packets past it
	// are dropped like the heavy ones.
	f.forward(read(f, lightIP, lightIP, lightIP, lightIP))
	if got, n := f.spared.Load(), f.spare.Len(); got != 4 || n != 4 {
		t.Fatalf("spared %d, spare batch %d; want 4, full", got, n)
	}
	if got := f.noCredits.Load(); got != 8 {
		t.Fatalf("no_credits %d, want 7 + the one light packet the full spare batch had no room for", got)
	}

	// A credit back: the spare batch takes it, and the batch read then
	// (heavy) finds none.
	f.credits.Release()
	f.forward(read(f, heavyIP, heavyIP))
	if len(*sent) != 1 || (*sent)[0].Batch.Len() != 4 || (*sent)[0].Batch.At(0).Meta.Addr != lightIP {
		t.Fatalf("sent %d batches, want the spare batch of 4 light packets", len(*sent))
	}
	if f.spare != nil || f.noCredits.Load() != 10 {
		t.Fatalf("spare %v, no_credits %d; want none left, 10 (the heavy 2 found no credit)", f.spare, f.noCredits.Load())
	}
	(*sent)[0].Batch.Release()

	// A retry with no credit re-arms; a stop drops what waits, counted.
	f.forward(read(f, lightIP))
	f.retrySpare()
	if f.spare == nil || !f.retrying {
		t.Fatal("a retry without a credit gave up on the spare batch")
	}
	f.dropSpare()
	if f.spare != nil || f.noCredits.Load() != 11 || f.spared.Load() != 5 {
		t.Fatalf("after the stop: spare %v, no_credits %d, spared %d; want none, 11, 5", f.spare, f.noCredits.Load(), f.spared.Load())
	}
	// 4 + 4 + 4 + 2 + 1 read: 4 sent, 11 dropped.
	if live := f.pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches out of the pool", live)
	}
}

// A batch all from the heaviest source adds nothing to the spare batch;
// with one source in the window nothing is spared.
func TestFetchShedHeavyOnly(t *testing.T) {
	f, _, _ := newTestFetcher(t, 4)
	f.forward(read(f, repeat(heavyIP, 4)...))
	f.forward(read(f, lightIP))
	f.forward(read(f, repeat(heavyIP, 4)...))
	if f.spared.Load() != 1 || f.noCredits.Load() != 8 || f.spare.Len() != 1 {
		t.Fatalf("spared %d, no_credits %d, spare %v; want the light packet spared alone, 8", f.spared.Load(), f.noCredits.Load(), f.spare)
	}
	f.dropSpare()
	// Sources alone: nothing spared.
	g, _, _ := newTestFetcher(t, 4)
	g.forward(read(g, repeat(heavyIP, 3)...))
	if g.spared.Load() != 0 || g.spare != nil || g.noCredits.Load() != 3 {
		t.Fatalf("one source: spared %d, spare %v, no_credits %d; want 0, none, 3", g.spared.Load(), g.spare, g.noCredits.Load())
	}
	if live := f.pool.Stats().Live + g.pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches out of the pool", live)
	}
}

// observe allocates nothing once its sources are known.
func TestFairShareObserveAllocs(t *testing.T) {
	pool, _ := packet.NewPool(packet.Config{BatchCap: 64})
	b := batchFrom(pool, append(repeat(heavyIP, 60), repeat(lightIP, 4)...)...)
	defer b.Release()
	w := newFairShare(fairWindow)
	if n := testing.AllocsPerRun(200, func() { w.observe(b) }); n != 0 {
		t.Fatalf("observe: %v allocations per batch, want 0", n)
	}
}

func BenchmarkFairShareObserve(b *testing.B) {
	pool, _ := packet.NewPool(packet.Config{BatchCap: 64})
	batch := batchFrom(pool, append(repeat(heavyIP, 60), repeat(lightIP, 4)...)...)
	defer batch.Release()
	w := newFairShare(fairWindow)
	b.ReportAllocs()
	b.SetBytes(int64(batch.Len()) * packet.Size)
	for b.Loop() {
		w.observe(batch)
	}
}

// A spared tracer packet says so on its batch's fetch span
// (tracer.spared), and the spare batch gets a recorded fetch span of its
// own, marked tpu.spare, from the packet's receive to its send.
func TestFetchShedTracerSpared(t *testing.T) {
	var out bytes.Buffer
	prov, err := trace.Setup(context.Background(), trace.Config{TraceWriter: &out})
	if err != nil {
		t.Fatal(err)
	}
	f, sent, _ := newTestFetcher(t, 4)
	f.hop = prov.Hop("fetch")
	f.forward(read(f, repeat(heavyIP, 4)...))
	m := read(f, heavyIP, lightIP)
	m.Batch.At(1).Meta.Flags |= packet.FlagTracer
	m.Span = f.hop.Start(trace.SpanContext{}, 0, true)
	f.forward(m)
	f.credits.Release()
	if !f.sendSpare() || len(*sent) != 1 {
		t.Fatal("the spare batch was not sent with a credit back")
	}
	(*sent)[0].Batch.Release()
	if err := prov.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, err := trace.ReadSpans(&out)
	if err != nil {
		t.Fatal(err)
	}
	var spared, spare bool
	for _, s := range spans {
		for _, e := range s.Events {
			if e.Name == "tracer.spared" && s.Name == "fetch" && fmt.Sprint(e.Attributes["tpu.index"]) == "1" {
				spared = true
			}
		}
		if s.Name == "fetch" && s.Attributes["tpu.spare"] == true && fmt.Sprint(s.Attributes["tpu.packets"]) == "1" &&
			s.Start.Equal(packet.Time(1001)) && s.SpanID == (*sent)[0].Span.OTel().SpanID().String() {
			spare = true
		}
	}
	if !spared || !spare {
		t.Fatalf("tracer.spared event %v, spare batch's span %v, in %+v", spared, spare, spans)
	}
}

// A QUIC peer's packets (packet.FlagQUIC, the peer's address in
// Meta.Addr) are keyed by IP like datagrams: a light peer is spared
// beside a heavy UDP sender, whatever port its connection came from.
func TestFetchShedSparesQUICPeer(t *testing.T) {
	f, _, _ := newTestFetcher(t, 4)
	f.forward(read(f, repeat(heavyIP, 4)...))
	m := read(f, heavyIP, netip.MustParseAddrPort("[::ffff:127.0.0.3]:9007"), heavyIP)
	m.Batch.At(1).Meta.Flags |= packet.FlagQUIC
	f.forward(m)
	if f.spared.Load() != 1 || f.spare.Len() != 1 || !f.spare.At(0).Has(packet.FlagQUIC) || f.noCredits.Load() != 6 {
		t.Fatalf("spared %d, spare %v, no_credits %d; want the QUIC peer's packet spared, flag kept, 6 dropped",
			f.spared.Load(), f.spare, f.noCredits.Load())
	}
	f.dropSpare()
}
