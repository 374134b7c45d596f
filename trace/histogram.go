package trace

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram counts durations in log-linear buckets, HdrHistogram's
// layout: each power of two from 1 ns to 2^40 ns (about 18 minutes;
// longer ones count in the last bucket) is cut into 32 equal sub-buckets.
// A quantile comes out within 1/64 (1.6%) of the true value, the
// nearest-rank quantile; Max is exact. Memory is fixed (40 x 32 counters,
// about 10 KB) and Record is a few atomic adds that never allocate, so
// every hop can record every batch (and every packet) whether or not its
// span is sampled. It is safe for concurrent use; the zero value is ready.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
	total  atomic.Uint64
	sum    atomic.Uint64 // nanoseconds
	max    atomic.Uint64
}

// HistogramError is the largest relative error of Histogram.Quantile:
// a value x lands in a bucket [lo, hi) with hi-lo <= lo/32, and the
// quantile is reported as the bucket's midpoint, at most lo/64 <= x/64
// from x.
const HistogramError = 1.0 / (2 * histSub)

const (
	histBits    = 5             // log2 of the sub-buckets per power of two
	histSub     = 1 << histBits // sub-buckets per power of two
	histPowers  = 40            // 2^0 .. 2^40 ns
	histBuckets = histPowers * histSub
)

// bucket returns the bucket of d nanoseconds: 32*floor(log2 d) plus the
// next five bits.
func bucket(ns uint64) int {
	if ns < 1 {
		ns = 1
	}
	e := bits.Len64(ns) - 1 // floor(log2)
	frac := 0
	if e >= histBits {
		frac = int(ns>>(e-histBits)) & (histSub - 1)
	} else {
		frac = int(ns<<(histBits-e)) & (histSub - 1)
	}
	b := e*histSub + frac
	if b >= histBuckets {
		b = histBuckets - 1
	}
	return b
}

// lower returns the smallest duration in bucket b.
func lower(b int) float64 {
	e, frac := b/histSub, b%histSub
	return math.Ldexp(1+float64(frac)/histSub, e)
}

// Record adds one observation.
func (h *Histogram) Record(d time.Duration) {
	ns := uint64(max(d, 0))
	h.counts[bucket(ns)].Add(1)
	h.total.Add(1)
	h.sum.Add(ns)
	for {
		m := h.max.Load()
		if ns <= m || h.max.CompareAndSwap(m, ns) {
			return
		}
	}
}

// Count returns the number of observations.
func (h *Histogram) Count() uint64 { return h.total.Load() }

// Mean returns the mean observation.
func (h *Histogram) Mean() time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Max returns the largest observation.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Quantile returns an estimate of the q-quantile (0 < q <= 1): the
// midpoint of the bucket holding it, capped at the largest observation.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for b := range h.counts {
		seen += h.counts[b].Load()
		if seen >= rank {
			mid := (lower(b) + lower(b+1)) / 2
			return min(time.Duration(mid), h.Max())
		}
	}
	return h.Max()
}

// Reset clears the histogram (not atomically with concurrent Records).
func (h *Histogram) Reset() {
	for b := range h.counts {
		h.counts[b].Store(0)
	}
	h.total.Store(0)
	h.sum.Store(0)
	h.max.Store(0)
}
