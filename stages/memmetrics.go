package stages

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"go.opentelemetry.io/otel/metric"
)

// The process's memory at /metrics, read at each scrape, so that a soak
// can tell what RSS holds (scripts/soak.sh judges each figure):
//
//	tpu_go_heap_live_bytes         heap bytes live at the end of the last GC (/gc/heap/live:bytes)
//	tpu_go_heap_goal_bytes         the heap size the next GC aims at (/gc/heap/goal:bytes): about
//	                               live x (1 + GOGC/100)
//	tpu_go_heap_bytes              heap bytes in objects now, live or not yet swept
//	                               (/memory/classes/heap/objects:bytes)
//	tpu_go_stack_bytes             goroutine stacks (/memory/classes/heap/stacks:bytes)
//	tpu_go_memory_bytes            all the Go runtime holds from the OS, less what it
//	                               released (/memory/classes/total:bytes - heap/released:bytes)
//	tpu_pebble_memtable_bytes      the ledger's memtable arenas (ledger.Memory.MemTables)
//	tpu_pebble_memtables           how many (LedgerMemory.MemTableCount)
//	tpu_pebble_block_cache_bytes   the ledger's block cache (LedgerMemory.BlockCache)
//	tpu_pebble_memory_bound_bytes  what bounds the two (ledger.MemoryBound)
//
// Pebble's memory is allocated by hand, outside the Go runtime's: RSS is
// about tpu_go_memory_bytes plus the Pebble figures' touched pages plus
// the binary.

// goMemoryNames are the runtime metrics memorySample reads, in its order.
var goMemoryNames = [...]string{
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
}

// goMemory is the Go runtime's memory figures at one moment, in bytes.
type goMemory struct {
	heapLive, heapGoal, heap, stacks, total uint64 // total: held from the OS, less released
}

// readGoMemory reads the figures into s (len(goMemoryNames) samples,
// named by newGoSamples) and returns them.
func readGoMemory(s []metrics.Sample) goMemory {
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0 // not supported by this runtime
		}
		return s[i].Value.Uint64()
	}
	return goMemory{heapLive: v(0), heapGoal: v(1), heap: v(2), stacks: v(3), total: v(4) - v(5)}
}

func newGoSamples() []metrics.Sample {
	s := make([]metrics.Sample, len(goMemoryNames))
	for i, n := range goMemoryNames {
		s[i].Name = n
	}
	return s
}

// registerMemoryMetrics adds the memory gauges to m; bank gives the
// ledger's figures.
func registerMemoryMetrics(m metric.Meter, bank *bank.Bank) error {
	gauge := func(name, desc string) (metric.Int64ObservableGauge, error) {
		return m.Int64ObservableGauge(name, metric.WithDescription(desc))
	}
	heapLive, err1 := gauge("tpu.go.heap_live_bytes", "Go heap bytes live at the end of the last GC")
	heapGoal, err2 := gauge("tpu.go.heap_goal_bytes", "the Go heap size the next GC aims at")
	heap, err3 := gauge("tpu.go.heap_bytes", "Go heap bytes in objects, live or not yet swept")
	stacks, err4 := gauge("tpu.go.stack_bytes", "goroutine stack bytes")
	total, err5 := gauge("tpu.go.memory_bytes", "bytes the Go runtime holds from the OS, less those released")
	memtables, err6 := gauge("tpu.pebble.memtable_bytes", "bytes of the ledger's memtable arenas, queued, zombie or kept for recycling")
	count, err7 := gauge("tpu.pebble.memtables", "the ledger's memtables, queued, zombie or kept for recycling")
	cache, err8 := gauge("tpu.pebble.block_cache_bytes", "bytes in the ledger's block cache")
	bound, err9 := gauge("tpu.pebble.memory_bound_bytes", "what bounds the ledger's memtable and block cache bytes together")
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9); err != nil {
		return fmt.Errorf("stages: memory metrics: %w", err)
	}
	_, err := m.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		g := readGoMemory(newGoSamples())
		ob.ObserveInt64(heapLive, int64(g.heapLive))
		ob.ObserveInt64(heapGoal, int64(g.heapGoal))
		ob.ObserveInt64(heap, int64(g.heap))
		ob.ObserveInt64(stacks, int64(g.stacks))
		ob.ObserveInt64(total, int64(g.total))
		l := bank.Ledger().Memory()
		ob.ObserveInt64(memtables, int64(l.MemTables))
		ob.ObserveInt64(count, l.MemTableCount)
		ob.ObserveInt64(cache, int64(l.BlockCache))
		ob.ObserveInt64(bound, ledger.MemoryBound)
		return nil
	}, heapLive, heapGoal, heap, stacks, total, memtables, count, cache, bound)
	if err != nil {
		return fmt.Errorf("stages: memory metrics: %w", err)
	}
	return nil
}
