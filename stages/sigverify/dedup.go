package sigverify

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"time"

	"github.com/tpugo/tpu/packet"
)

// DedupConfig configures a Deduper.
type DedupConfig struct {
	// Bits is the size of the filter in bits. Zero means DefaultDedupBits
	// (about 8 MiB, as Agave's sigverify uses).
	Bits uint64
	// FalsePositiveRate is the estimated false-positive rate at which the
	// filter is reset and reseeded. Zero means 0.001.
	FalsePositiveRate float64
	// MaxAge is the longest the filter runs between resets. Zero means
	// 2 s.
	MaxAge time.Duration
}

// Defaults of DedupConfig (Agave: DEDUPER_NUM_BITS, _FALSE_POSITIVE_RATE,
// MAX_DEDUPER_AGE).
const (
	DefaultDedupBits              = 63_999_979
	DefaultDedupFalsePositiveRate = 0.001
	DefaultDedupMaxAge            = 2 * time.Second
)

// dedupHashes is the number of filter bits set per packet (Agave: K = 2).
const dedupHashes = 2

// ErrDedupConfig reports an invalid DedupConfig.
var ErrDedupConfig = errors.New("sigverify: invalid dedup config")

// Validate reports a configuration NewDeduper would reject.
func (c DedupConfig) Validate() error {
	if c.Bits > 1<<32 {
		return fmt.Errorf("%w: %d bits, at most 2^32", ErrDedupConfig, c.Bits)
	}
	if c.Bits != 0 && c.Bits < 64 {
		return fmt.Errorf("%w: %d bits, at least 64", ErrDedupConfig, c.Bits)
	}
	if c.FalsePositiveRate < 0 || c.FalsePositiveRate >= 1 {
		return fmt.Errorf("%w: false-positive rate %v outside [0,1)", ErrDedupConfig, c.FalsePositiveRate)
	}
	if c.MaxAge < 0 {
		return fmt.Errorf("%w: negative max age", ErrDedupConfig)
	}
	return nil
}

// DedupStats counts what a Deduper did.
type DedupStats struct {
	Checked     uint64 // packets looked up
	Duplicates  uint64 // packets found in the filter
	Saturations uint64 // resets because the false-positive estimate passed the threshold
	AgeResets   uint64 // resets because the filter passed its age
}

// Deduper is a probabilistic filter of recently seen packets in the spirit
// of Agave's sigverify deduper: a fixed array of bits, two bits per packet
// chosen by a seeded hash of its bytes, reset and reseeded when its
// estimated false-positive rate or its age passes a limit. A packet whose
// bits are all set already is a duplicate; a false positive discards a
// packet that was new, with the configured probability at most.
//
// A Deduper is not safe for concurrent use: the sigverify stage owns one.
type Deduper struct {
	bits     []uint64
	nbits    uint64
	set      uint64 // bits set, for the false-positive estimate
	seed     maphash.Seed
	maxFill  uint64 // reset when set reaches this
	maxAge   time.Duration
	born     time.Time
	stats    DedupStats
	fpTarget float64
	pos      [][dedupHashes]uint64 // scratch for Dedup
}

// NewDeduper returns an empty filter whose age counts from now.
func NewDeduper(cfg DedupConfig, now time.Time) (*Deduper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Bits == 0 {
		cfg.Bits = DefaultDedupBits
	}
	if cfg.FalsePositiveRate == 0 {
		cfg.FalsePositiveRate = DefaultDedupFalsePositiveRate
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultDedupMaxAge
	}
	d := &Deduper{
		bits:     make([]uint64, (cfg.Bits+63)/64),
		nbits:    cfg.Bits,
		maxAge:   cfg.MaxAge,
		fpTarget: cfg.FalsePositiveRate,
	}
	// The estimate is (set/nbits)^K; reset once it reaches the target.
	d.maxFill = uint64(math.Ceil(math.Pow(cfg.FalsePositiveRate, 1.0/dedupHashes) * float64(cfg.Bits)))
	d.reset(now)
	return d, nil
}

func (d *Deduper) reset(now time.Time) {
	clear(d.bits)
	d.set = 0
	d.seed = maphash.MakeSeed()
	d.born = now
}

// Seen records data and reports whether it was (probably) seen since the
// last reset.
func (d *Deduper) Seen(data []byte) bool { return d.record(d.positions(data)) }

// record sets the bits at pos and reports whether all were set already.
func (d *Deduper) record(pos [dedupHashes]uint64) bool {
	d.stats.Checked++
	dup := true
	for _, i := range pos {
		w, m := i/64, uint64(1)<<(i%64)
		if d.bits[w]&m == 0 {
			d.bits[w] |= m
			d.set++
			dup = false
		}
	}
	if dup {
		d.stats.Duplicates++
	}
	return dup
}

// positions returns the filter bits of data: two positions from one
// seeded 64-bit hash, its halves scaled to [0, nbits). The halves are
// independent enough for a filter of at most 2^32 bits.
func (d *Deduper) positions(data []byte) [dedupHashes]uint64 {
	h := maphash.Bytes(d.seed, data)
	return [dedupHashes]uint64{(h & 0xffffffff) * d.nbits >> 32, (h >> 32) * d.nbits >> 32}
}

// FalsePositiveRate returns the current estimated false-positive rate:
// the chance that a new packet finds all its bits set.
func (d *Deduper) FalsePositiveRate() float64 {
	return math.Pow(float64(d.set)/float64(d.nbits), dedupHashes)
}

// MaybeReset resets and reseeds the filter if its false-positive estimate
// has reached the configured rate or its age the configured limit. It
// reports whether it reset. Call it once per batch, before Dedup.
func (d *Deduper) MaybeReset(now time.Time) bool {
	switch {
	case d.set >= d.maxFill:
		d.stats.Saturations++
	case now.Sub(d.born) >= d.maxAge:
		d.stats.AgeResets++
	default:
		return false
	}
	d.reset(now)
	return true
}

// Dedup discards, with outcome packet.OutcomeDuplicate, every packet of
// b whose bytes were seen before (in this batch or an earlier one), and
// returns how many it discarded. Packets already discarded are skipped.
// It borrows b; the caller must hold its sole reference.
//
// It hashes the whole batch before it touches the filter, so that the
// filter's cache misses (it is megabytes, read at random) are independent
// loads the CPU can overlap rather than a chain of stalls.
func (d *Deduper) Dedup(b *packet.Batch) int {
	pkts := b.Packets()
	if cap(d.pos) < len(pkts) {
		d.pos = make([][dedupHashes]uint64, len(pkts))
	}
	pos := d.pos[:len(pkts)]
	for i := range pkts {
		if !pkts[i].Discarded() {
			pos[i] = d.positions(pkts[i].Data())
		}
	}
	n := 0
	for i := range pkts {
		p := &pkts[i]
		if p.Discarded() {
			continue
		}
		if d.record(pos[i]) {
			p.Discard(packet.OutcomeDuplicate)
			n++
		}
	}
	return n
}

// Stats returns the deduper's counters.
func (d *Deduper) Stats() DedupStats { return d.stats }
