package sigverify

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
)

var t0 = time.Unix(1_700_000_000, 0)

func newDeduper(t testing.TB, cfg DedupConfig) *Deduper {
	t.Helper()
	d, err := NewDeduper(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDedupConfigValidate(t *testing.T) {
	for _, c := range []DedupConfig{{Bits: 10}, {Bits: 1<<32 + 1}, {FalsePositiveRate: 1}, {FalsePositiveRate: -0.1}, {MaxAge: -1}} {
		if _, err := NewDeduper(c, t0); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestDedupCatchesDuplicates(t *testing.T) {
	d := newDeduper(t, DedupConfig{Bits: 1 << 20})
	pool, _ := packet.NewPool(packet.Config{BatchCap: 8})
	b := pool.Get()
	defer b.Release()
	for _, s := range []string{"a", "b", "a", "c", "b", "a"} {
		b.Next().Fill([]byte("transaction " + s))
	}
	b.At(1).Discard(packet.OutcomeParse) // skipped: never recorded
	if n := d.Dedup(b); n != 2 {
		t.Fatalf("discarded %d, want 2", n)
	}
	wantOutcome := []packet.Outcome{packet.OutcomeNone, packet.OutcomeParse, packet.OutcomeDuplicate, packet.OutcomeNone, packet.OutcomeNone, packet.OutcomeDuplicate}
	for i, w := range wantOutcome {
		if got := b.At(i).Meta.Outcome; got != w {
			t.Errorf("packet %d: outcome %v, want %v", i, got, w)
		}
	}
	// Across batches too, until a reset.
	if !d.Seen([]byte("transaction c")) {
		t.Error("second batch: duplicate not caught")
	}
	if s := d.Stats(); s.Checked != 6 || s.Duplicates != 3 {
		t.Errorf("stats %+v", s)
	}
}

func randomPacket(rng *rand.Rand, buf []byte) []byte {
	for i := 0; i < len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], rng.Uint64())
	}
	return buf
}

// TestDedupFalsePositiveRate fills a filter to just under its reset point
// and measures how many fresh packets it wrongly calls duplicates.
func TestDedupFalsePositiveRate(t *testing.T) {
	const bound = 0.001
	d := newDeduper(t, DedupConfig{Bits: 1 << 22, FalsePositiveRate: bound, MaxAge: time.Hour})
	rng := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 64)
	for d.FalsePositiveRate() < bound*0.999 {
		d.Seen(randomPacket(rng, buf))
	}
	if d.MaybeReset(t0) {
		t.Fatal("reset before the estimate reached the bound")
	}
	const trials = 2_000_000
	fp := 0
	for range trials {
		// Fresh packets: check without recording them, so the fill stays.
		p := randomPacket(rng, buf)
		if d.wouldBeDuplicate(p) {
			fp++
		}
	}
	rate := float64(fp) / trials
	est := d.FalsePositiveRate()
	// The count is random: the filter's hash (maphash) has a fresh seed
	// each run, and no fixed seed would help, as the runtime's hash keys
	// itself at random in each process. At 2e6 trials and p = 0.001 the
	// standard deviation is 2.2e-5; allow five of them (1.1e-4, tighter
	// than four at 1e6 trials), which a sound filter passes in all but
	// about one run in a million (both checks together), where four
	// failed about one in 10,000.
	sigma := math.Sqrt(bound * (1 - bound) / trials)
	t.Logf("estimated %.5f, measured %.5f (%d of %d)", est, rate, fp, trials)
	if rate > bound+5*sigma {
		t.Fatalf("measured false-positive rate %.5f exceeds the bound %.4f", rate, bound)
	}
	if math.Abs(rate-est) > 5*sigma {
		t.Fatalf("measured %.5f is far from the estimate %.5f: a poor hash", rate, est)
	}
	// One more packet pushes it past the bound: the next check resets.
	for !d.MaybeReset(t0) {
		d.Seen(randomPacket(rng, buf))
	}
	if s := d.Stats(); s.Saturations != 1 || s.AgeResets != 0 || d.FalsePositiveRate() != 0 {
		t.Fatalf("after saturation: %+v, estimate %v", s, d.FalsePositiveRate())
	}
}

// wouldBeDuplicate reports whether Seen would call data a duplicate,
// without recording it.
func (d *Deduper) wouldBeDuplicate(data []byte) bool {
	for _, i := range d.positions(data) {
		if d.bits[i/64]&(1<<(i%64)) == 0 {
			return false
		}
	}
	return true
}

func TestDedupAgeReset(t *testing.T) {
	d := newDeduper(t, DedupConfig{Bits: 1 << 16, MaxAge: 2 * time.Second})
	d.Seen([]byte("x"))
	if d.MaybeReset(t0.Add(1999 * time.Millisecond)) {
		t.Fatal("reset before max age")
	}
	if !d.MaybeReset(t0.Add(2 * time.Second)) {
		t.Fatal("no reset at max age")
	}
	if d.Seen([]byte("x")) {
		t.Fatal("packet still seen after reset")
	}
	if s := d.Stats(); s.AgeResets != 1 || s.Saturations != 0 {
		t.Fatalf("%+v", s)
	}
	// The age counts from the reset.
	if d.MaybeReset(t0.Add(3 * time.Second)) {
		t.Fatal("reset again too early")
	}
}

func TestDedupAllocs(t *testing.T) {
	d := newDeduper(t, DedupConfig{Bits: 1 << 20})
	pool, _ := packet.NewPool(packet.Config{})
	b := pool.Get()
	defer b.Release()
	for i := 0; i < 64; i++ {
		b.Next().Fill([]byte{byte(i), 1, 2, 3})
	}
	if a := testing.AllocsPerRun(100, func() { d.Dedup(b) }); a != 0 {
		t.Fatalf("Dedup allocated %.1f times", a)
	}
}

// BenchmarkDedup measures Dedup over 64-packet batches of fresh 215-byte
// packets whose bytes are in cache, as they are right after the socket
// wrote them; ns/op is per packet. bits=default is the 8 MiB filter, read
// at random; bits=64Ki fits in L1 and shows the cost without misses.
func BenchmarkDedup(b *testing.B) {
	b.Run("bits=default", func(b *testing.B) { benchDedup(b, DedupConfig{}) })
	b.Run("bits=64Ki", func(b *testing.B) { benchDedup(b, DedupConfig{Bits: 1 << 16, FalsePositiveRate: 0.9}) })
}

func benchDedup(b *testing.B, cfg DedupConfig) {
	d := newDeduper(b, cfg)
	rng := rand.New(rand.NewPCG(1, 1))
	pool, _ := packet.NewPool(packet.Config{})
	const nb = 16
	batches := make([]*packet.Batch, nb)
	buf := make([]byte, 216)
	for i := range batches {
		batches[i] = pool.Get()
		for j := 0; j < 64; j++ {
			batches[i].Next().Fill(randomPacket(rng, buf)[:215])
		}
	}
	b.SetBytes(215)
	b.ReportAllocs()
	round := uint64(0)
	for i := 0; i < b.N; i += 64 {
		d.Dedup(batches[(i/64)%nb])
		if (i/64)%nb == nb-1 {
			// Make every packet new again: a fresh counter in its first
			// bytes, and no outcome.
			round++
			for _, bt := range batches {
				for j := range bt.Packets() {
					p := bt.At(j)
					p.Meta.Flags, p.Meta.Outcome = 0, 0
					binary.LittleEndian.PutUint64(p.Data(), round)
				}
			}
			d.MaybeReset(t0)
		}
	}
}
