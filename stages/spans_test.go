package stages_test

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
)

// runTraced runs count transfers through a graph built from cfg, with
// every span recorded, and returns the spans it exported.
func runTraced(t *testing.T, cfg stages.Config, count int, send loadgen.SendConfig) []trace.SpanRecord {
	t.Helper()
	var buf syncBuffer
	prov, err := trace.Setup(context.Background(), trace.Config{SampleRatio: 1, TraceWriter: &buf})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Trace = prov
	g := startGraph(t, cfg)
	load, err := loadgen.Build(loadgen.Config{Seed: seed, Accounts: 64, Blockhash: latestBlockhash(t, g), Count: count})
	if err != nil {
		t.Fatal(err)
	}
	send.Target = g.Addr()
	if _, err := load.Send(send); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, g, uint64(count))
	stop(t, g) // the last slot is committed
	if err := prov.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, err := trace.ReadSpans(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

// stepSpans maps each tracer signature to the span holding its step
// called event.
func stepSpans(spans []trace.SpanRecord, event string) map[string]trace.SpanRecord {
	out := map[string]trace.SpanRecord{}
	for _, s := range spans {
		for _, e := range s.Events {
			if e.Name == event {
				out[e.Attributes[trace.TracerSigKey].(string)] = s
			}
		}
	}
	return out
}

// TestExecuteSpansLinkTheirSources: with banking behind (slow workers,
// so several batches wait in its buffer) and every packet a tracer, each
// execute span links to exactly the schedule spans of the batches its
// transactions arrived in (which the test reads from where each
// transaction's buffered and executed steps are), its parent is the
// oldest of them, and no span's parent or link is missing. Each commit
// span links to the execute spans of the work it made durable.
func TestExecuteSpansLinkTheirSources(t *testing.T) {
	const n = 240
	cfg := stages.Config{Fetch: stages.FetchConfig{TracerEvery: 1}}
	cfg.Banking.Scheduler = scheduler.Config{Workers: 2, BatchSize: 16, ExecDelay: time.Millisecond}
	spans := runTraced(t, cfg, n, loadgen.SendConfig{Rate: 6000, BatchSize: 4})

	a := trace.Analyze(spans)
	if a.Orphans != 0 || a.Dangling != 0 || a.Children == 0 {
		t.Errorf("%d spans with their parent missing, %d links to a missing span (%d children)", a.Orphans, a.Dangling, a.Children)
	}
	buffered := stepSpans(spans, "tracer.buffered") // sig -> its batch's schedule span
	executed := stepSpans(spans, "tracer.executed") // sig -> the execute span that ran it
	committed := stepSpans(spans, "tracer.committed")
	if len(buffered) != n || len(executed) != n || len(committed) != n {
		t.Fatalf("%d buffered, %d executed, %d committed tracers; want %d each", len(buffered), len(executed), len(committed), n)
	}
	want := map[string][]string{} // execute span -> schedule spans
	for sig, ex := range executed {
		if src := buffered[sig].SpanID; !slices.Contains(want[ex.SpanID], src) {
			want[ex.SpanID] = append(want[ex.SpanID], src)
		}
	}
	schedStart := map[string]time.Time{}
	for _, s := range spans {
		if s.Name == "banking.schedule" {
			schedStart[s.SpanID] = s.Start
		}
	}
	multi := 0
	for _, ex := range spans {
		if ex.Name != "banking.execute" {
			continue
		}
		var got []string
		for _, l := range ex.Links {
			got = append(got, l.SpanID)
		}
		w := want[ex.SpanID]
		sort.Strings(got)
		sort.Strings(w)
		if !slices.Equal(got, w) {
			t.Errorf("execute span %s links %v, want the schedule spans of its transactions' batches %v", ex.SpanID, got, w)
			continue
		}
		oldest := slices.MinFunc(w, func(x, y string) int { return schedStart[x].Compare(schedStart[y]) })
		if ex.ParentID != oldest {
			t.Errorf("execute span %s has parent %s, want the oldest source %s", ex.SpanID, ex.ParentID, oldest)
		}
		if len(w) > 1 {
			multi++
		}
	}
	if multi == 0 {
		t.Error("no work batch drew from several batches: banking never fell behind")
	}
	for sig, c := range committed {
		if !slices.ContainsFunc(c.Links, func(l trace.LinkRecord) bool { return l.SpanID == executed[sig].SpanID }) {
			t.Errorf("tracer %s: its commit span does not link the execute span that ran it", sig)
		}
	}
}

// TestTracerStepsAtTrueTimes: with a 20 ms execution delay, fetch
// coalescing for 20 ms and every packet a tracer, each tracer's steps
// come in the documented order at non-decreasing times, its execution
// step spans the delay, and its receive time is the socket's: inside its
// fetch span, the first packet's at the span's start, and the batch sent
// on only after the coalescing wait.
func TestTracerStepsAtTrueTimes(t *testing.T) {
	const delay, coalesce, n = 20 * time.Millisecond, 20 * time.Millisecond, 24
	cfg := stages.Config{Fetch: stages.FetchConfig{TracerEvery: 1, Coalesce: coalesce}}
	cfg.Banking.Scheduler = scheduler.Config{Workers: 2, ExecDelay: delay}
	spans := runTraced(t, cfg, n, loadgen.SendConfig{Rate: 200, BatchSize: 1}) // 5 ms apart

	a := trace.Analyze(spans)
	if len(a.Tracers) != n {
		t.Fatalf("%d tracer paths, want %d", len(a.Tracers), n)
	}
	order := []string{"tracer.received", "tracer.verified", "tracer.buffered", "tracer.scheduled", "tracer.execute_start", "tracer.executed", "tracer.committed"}
	fetched := stepSpans(spans, "tracer.received")
	firstRecv := map[string]time.Time{} // fetch span -> its earliest receive step
	for _, p := range a.Tracers {
		var got []string
		at := map[string]time.Time{}
		for _, s := range p.Steps {
			got = append(got, s.Event)
			at[s.Event] = s.Time
		}
		// Steps at equal times may sort either way: compare as a set in
		// the documented order, then the times in that order.
		sorted := slices.Clone(got)
		slices.SortStableFunc(sorted, func(x, y string) int { return slices.Index(order, x) - slices.Index(order, y) })
		if !slices.Equal(sorted, order) {
			t.Errorf("tracer %s: steps %v, want %v", p.Signature, got, order)
			continue
		}
		for i := 1; i < len(order); i++ {
			if at[order[i]].Before(at[order[i-1]]) {
				t.Errorf("tracer %s: %s at %v before %s at %v", p.Signature, order[i], at[order[i]], order[i-1], at[order[i-1]])
			}
		}
		if d := at["tracer.executed"].Sub(at["tracer.execute_start"]); d < delay {
			t.Errorf("tracer %s: executed %v after its start, want at least the %v delay", p.Signature, d, delay)
		}
		f := fetched[p.Signature]
		recv := at["tracer.received"]
		if recv.Before(f.Start) || !recv.Before(f.End) {
			t.Errorf("tracer %s: received at %v, outside its fetch span %v..%v", p.Signature, recv, f.Start, f.End)
		}
		if r, ok := firstRecv[f.SpanID]; !ok || recv.Before(r) {
			firstRecv[f.SpanID] = recv
		}
	}
	for _, f := range fetched {
		first := firstRecv[f.SpanID]
		if !first.Equal(f.Start) {
			t.Errorf("fetch span %s starts at %v, its first packet received at %v", f.SpanID, f.Start, first)
		}
		// Not full (a few packets in 20 ms): sent once the wait is over.
		if w := f.End.Sub(first); w < coalesce*3/4 {
			t.Errorf("fetch span %s: sent %v after its first packet was received, want about the %v coalescing wait", f.SpanID, w, coalesce)
		}
	}
}
