package procstats

import "runtime/metrics"

// Stats is the process's counters, cumulative since it started; the
// difference of two (Sub) is what happened between them.
type Stats struct {
	Allocs uint64 // heap objects allocated (tiny objects, under 16 bytes without pointers, may be counted in groups)
	Bytes  uint64 // heap bytes allocated
	// GCCPU and CPU are CPU seconds as runtime/metrics estimates them:
	// GCCPU spent on garbage collection, CPU available to Go code
	// (GOMAXPROCS x wall time), so that GCCPU/CPU is GC's share.
	GCCPU, CPU float64
}

// names are the runtime/metrics read, in the order Read stores them.
var names = [...]string{
	"/gc/heap/allocs:objects",
	"/gc/heap/allocs:bytes",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
}

// Read returns the counters now.
func Read() Stats {
	var s [len(names)]metrics.Sample
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s[:])
	return Stats{
		Allocs: s[0].Value.Uint64(),
		Bytes:  s[1].Value.Uint64(),
		GCCPU:  s[2].Value.Float64(),
		CPU:    s[3].Value.Float64(),
	}
}

// Sub returns what the counters gained from before to s.
func (s Stats) Sub(before Stats) Stats {
	return Stats{
		Allocs: s.Allocs - before.Allocs,
		Bytes:  s.Bytes - before.Bytes,
		GCCPU:  s.GCCPU - before.GCCPU,
		CPU:    s.CPU - before.CPU,
	}
}

// PerOp returns the allocations and bytes per operation, for n
// operations (0 and 0 when n is 0).
func (s Stats) PerOp(n uint64) (allocs, bytes float64) {
	if n == 0 {
		return 0, 0
	}
	return float64(s.Allocs) / float64(n), float64(s.Bytes) / float64(n)
}

// GCPercent returns GC's share of the CPU, in percent (0 when no CPU time
// passed).
func (s Stats) GCPercent() float64 {
	if s.CPU <= 0 {
		return 0
	}
	return 100 * s.GCCPU / s.CPU
}
