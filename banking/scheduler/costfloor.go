package scheduler

import "math/bits"

// costFloor counts the buffer's transactions by cost, so that the
// scheduler can tell, without popping one, that none of them fits what
// is left of the block. Without it a full block cost a pass that popped
// (and resolved) every buffered transaction only to set it aside until
// the slot's end: 10-29k a slot in a run with its blocks full, a third
// more pops and resolves than transactions executed (BENCHMARKS.md).
//
// Costs go in log-linear buckets: exact below 64, then 32 a power of
// two, so a bucket's lowest cost is within 1/32 of any cost in it. floor
// returns the lowest cost of the lowest non-empty bucket: never above
// the cheapest transaction's cost, and within 1/32 of it.
type costFloor struct {
	n    [costBuckets]uint32
	used [(costBuckets + 63) / 64]uint64 // bit i: n[i] > 0
}

// costBuckets covers every uint64: 64 exact, then 32 for each shift
// from 1 to 58 (bucketOf).
const costBuckets = 32 * 60

// bucketOf returns c's bucket: c itself below 64, else 32 shift + c >>
// shift with the shift that puts c >> shift in [32, 64).
func bucketOf(c uint64) int {
	shift := max(bits.Len64(c)-6, 0)
	return 32*shift + int(c>>shift)
}

// bucketLow returns the lowest cost in bucket i.
func bucketLow(i int) uint64 {
	if i < 64 {
		return uint64(i)
	}
	shift := i/32 - 1
	return uint64(i-32*shift) << shift
}

func (f *costFloor) add(c uint64) {
	i := bucketOf(c)
	f.n[i]++
	f.used[i/64] |= 1 << (i % 64)
}

func (f *costFloor) remove(c uint64) {
	i := bucketOf(c)
	f.n[i]--
	if f.n[i] == 0 {
		f.used[i/64] &^= 1 << (i % 64)
	}
}

// floor returns a cost no transaction counted is below, within 1/32 of
// the cheapest one's; the largest uint64 when none is counted.
func (f *costFloor) floor() uint64 {
	for w, u := range f.used {
		if u != 0 {
			return bucketLow(64*w + bits.TrailingZeros64(u))
		}
	}
	return ^uint64(0)
}
