package stages

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/tpugo/tpu/trace"
)

// The memory gauges at /metrics are the runtime's and the ledger's
// figures of the moment: between two GCs, the heap's live bytes and goal
// do not move and its object bytes only grow, so the scraped ones lie
// between readings taken just before and just after the scrape (taken
// again if a GC ran meanwhile).
func TestMemoryMetrics(t *testing.T) {
	bank, err := bank.Open(bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: "memmetrics", Accounts: 16}})
	if err != nil {
		t.Fatal(err)
	}
	defer bank.Close()
	prov, err := trace.Setup(context.Background(), trace.Config{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Shutdown(context.Background())
	if err := registerMemoryMetrics(prov.Meter(), bank); err != nil {
		t.Fatal(err)
	}

	mem := bank.Ledger().Memory() // nothing writes to the ledger: it holds still
	// The runtime's figures from runtime.ReadMemStats (not through the
	// code under test), and the heap's live bytes (which MemStats has
	// not) by name.
	var before, after runtime.MemStats
	var got map[string]float64
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	for try := 0; ; try++ {
		if try == 100 {
			t.Fatal("a GC during each of 100 scrapes")
		}
		// A GC (the next is far off) that also returns every free page
		// to the OS now, so the background scavenger has none left to
		// release during the scrape: after earlier tests freed their
		// 8 MiB duplicate filters it once released 300 KiB between the
		// two readings, and the memory gauge read below both.
		debug.FreeOSMemory()
		runtime.ReadMemStats(&before)
		got = scrapeGauges(t, prov.MetricsURL())
		runtime.ReadMemStats(&after)
		if after.NumGC == before.NumGC {
			break
		}
	}
	metrics.Read(gc)
	if n := gc[0].Value.Uint64(); n != uint64(before.NumGC) {
		t.Fatalf("%d GCs, MemStats says %d", n, before.NumGC)
	}

	exact := func(name string, want uint64) {
		t.Helper()
		if v, ok := got[name]; !ok || v != float64(want) {
			t.Errorf("%s = %v (present %v), want %d", name, v, ok, want)
		}
	}
	// within: lo <= v <= hi, widened by slack, and not zero.
	within := func(name string, lo, hi, slack uint64) {
		t.Helper()
		lo, hi = min(lo, hi), max(lo, hi)
		if v, ok := got[name]; !ok || v < float64(lo-min(lo, slack)) || v > float64(hi+slack) || v == 0 {
			t.Errorf("%s = %v (present %v), want %d to %d (slack %d), not zero", name, v, ok, lo, hi, slack)
		}
	}
	exact("tpu_go_heap_live_bytes", gc[1].Value.Uint64())
	exact("tpu_go_heap_goal_bytes", before.NextGC)
	within("tpu_go_heap_bytes", before.HeapAlloc, after.HeapAlloc, 0)
	// The scavenger may return pages to the OS meanwhile, and a goroutine
	// start or end move the stacks.
	within("tpu_go_memory_bytes", before.Sys-before.HeapReleased, after.Sys-after.HeapReleased, 256<<10)
	within("tpu_go_stack_bytes", before.StackInuse, after.StackInuse, 256<<10)
	if now := bank.Ledger().Memory(); now != mem || mem.MemTables == 0 {
		t.Fatalf("the ledger's memory moved (%+v, then %+v), or is zero", mem, now)
	}
	exact("tpu_pebble_memtable_bytes", mem.MemTables)
	exact("tpu_pebble_memtables", uint64(mem.MemTableCount))
	exact("tpu_pebble_block_cache_bytes", mem.BlockCache)
	exact("tpu_pebble_memory_bound_bytes", ledger.MemoryBound)
}

// scrapeGauges reads the unlabelled series at url (the gauges).
func scrapeGauges(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %v, status %d", err, resp.StatusCode)
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		// The exporter adds an otel_scope labels set to each series.
		name, _, _ = strings.Cut(name, "{")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("scrape: bad line %q", line)
		}
		m[name] = f
	}
	return m
}
