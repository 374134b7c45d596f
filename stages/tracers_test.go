package stages

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// bookSpans runs f on a spanBook whose provider records at ratio (with
// sources given as tracer roots or not by f itself) and returns the spans
// exported.
func bookSpans(t *testing.T, ratio float64, f func(b *spanBook, sched *trace.Hop)) []trace.SpanRecord {
	t.Helper()
	var buf bytes.Buffer
	prov, err := trace.Setup(context.Background(), trace.Config{SampleRatio: ratio, TraceWriter: &buf})
	if err != nil {
		t.Fatal(err)
	}
	f(newSpanBook(prov.Hop("banking.execute"), prov.Hop("banking.commit")), prov.Hop("banking.schedule"))
	if err := prov.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, err := trace.ReadSpans(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

func sigOf(b byte) *[64]byte {
	var s [64]byte
	s[0] = b
	return &s
}

func spanID(c trace.SpanContext) string { return c.OTel().SpanID().String() }

func linkIDs(s trace.SpanRecord) []string {
	var out []string
	for _, l := range s.Links {
		out = append(out, l.SpanID)
	}
	return out
}

func named(spans []trace.SpanRecord, name string) []trace.SpanRecord {
	var out []trace.SpanRecord
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestSpanBookWork: an execute span links to every known source's
// schedule span and has the oldest recorded one as parent (not the last
// received); a forgotten source is not linked; a tracer's steps are at
// the times the worker stamped, in order.
func TestSpanBookWork(t *testing.T) {
	t0 := packet.Now()
	ms := func(n int) int64 { return t0 + int64(n)*int64(time.Millisecond) }
	var b, c trace.SpanContext
	spans := bookSpans(t, 0, func(bk *spanBook, sched *trace.Hop) {
		mk := func(seq uint64, rec bool) trace.SpanContext {
			s := sched.Start(trace.SpanContext{}, 0, rec) // ratio 0: recorded only as a tracer batch
			s.End()
			bk.source(seq, s.Context())
			return s.Context()
		}
		_, b, c, _ = mk(10, false), mk(11, true), mk(12, true), mk(13, true) // 10 unrecorded, 13 forgotten
		bk.sourceDone(13)
		tts := []scheduler.TxTimes{{Sig: sigOf(1), Source: 12, Start: ms(3), End: ms(5), Outcome: packet.OutcomeExecutedOK}}
		bk.work([]uint64{12, 10, 11, 13}, tts, workTimes{sealed: ms(1), started: ms(2), finished: ms(6), worker: 1, n: 4}, 7)
		bk.work([]uint64{10}, nil, workTimes{sealed: ms(1), started: ms(2), finished: ms(6), n: 1}, 7) // unrecorded source only
	})
	ex := named(spans, "banking.execute")
	if len(ex) != 1 {
		t.Fatalf("%d execute spans, want 1 (the one with no recorded source is not recorded)", len(ex))
	}
	e := ex[0]
	if want := []string{spanID(c), spanID(b)}; !slices.Equal(linkIDs(e), want) || e.ParentID != spanID(b) {
		t.Errorf("parent %s links %v; want parent %s (oldest recorded), links %v (recorded, known)", e.ParentID, linkIDs(e), spanID(b), want)
	}
	if !e.Start.Equal(packet.Time(ms(2))) || !e.End.Equal(packet.Time(ms(6))) {
		t.Errorf("execute span %v..%v, want the worker's start and end", e.Start, e.End)
	}
	var steps []string
	for i, ev := range e.Events {
		steps = append(steps, ev.Name)
		if want := packet.Time(ms([]int{1, 3, 5}[i])); !ev.Time.Equal(want) {
			t.Errorf("%s at %v, want %v", ev.Name, ev.Time, want)
		}
	}
	if want := []string{"tracer.scheduled", "tracer.execute_start", "tracer.executed"}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
}

// TestSpanBookCommit: one commit span per slot, from the ask to the
// durable time, linked to the slot's recorded execute spans, with a
// committed step for each tracer executed in it; a later slot's commit
// commits the earlier ones, an earlier one does not commit a later slot,
// and close ends what never became durable.
func TestSpanBookCommit(t *testing.T) {
	t0 := packet.Now()
	ms := func(n int) int64 { return t0 + int64(n)*int64(time.Millisecond) }
	var left int
	spans := bookSpans(t, 1, func(bk *spanBook, sched *trace.Hop) {
		s := sched.Start(trace.SpanContext{}, 0, false)
		s.End()
		bk.source(1, s.Context())
		w := workTimes{sealed: ms(0), started: ms(1), finished: ms(2), n: 1}
		bk.work([]uint64{1}, nil, w, 7)
		bk.tracerDone(sigOf(1), packet.OutcomeExecutedOK, 7)
		bk.tracerDone(sigOf(2), packet.OutcomeEvicted, 7) // not executed: never committed
		bk.slotEnded(7, ms(3))
		bk.work([]uint64{1}, nil, w, 8)
		bk.work([]uint64{1}, nil, w, 8)
		bk.tracerDone(sigOf(3), packet.OutcomeExecutedFailed, 8)
		bk.slotEnded(8, ms(4))
		bk.slotEnded(9, ms(5))
		bk.committed(6, ms(9)) // nothing
		bk.committed(8, ms(10))
		left = len(bk.commits)
		bk.close(ms(11))
	})
	if left != 1 {
		t.Errorf("%d commits open after slot 8's, want 1 (slot 9)", left)
	}
	ex := named(spans, "banking.execute")
	bySlot := map[float64]trace.SpanRecord{} // JSON numbers
	for _, c := range named(spans, "banking.commit") {
		bySlot[c.Attributes["tpu.slot"].(float64)] = c
	}
	for _, tc := range []struct {
		slot       float64
		links      []string
		start, end int
		steps      int
	}{
		{7, []string{ex[0].SpanID}, 3, 10, 1},
		{8, []string{ex[1].SpanID, ex[2].SpanID}, 4, 10, 1},
		{9, nil, 5, 11, 0},
	} {
		c, ok := bySlot[tc.slot]
		if !ok {
			t.Errorf("no commit span for slot %v", tc.slot)
			continue
		}
		if !slices.Equal(linkIDs(c), tc.links) || c.ParentID != "" {
			t.Errorf("slot %v: parent %q links %v, want none and %v", tc.slot, c.ParentID, linkIDs(c), tc.links)
		}
		if !c.Start.Equal(packet.Time(ms(tc.start))) || !c.End.Equal(packet.Time(ms(tc.end))) {
			t.Errorf("slot %v: commit %v..%v", tc.slot, c.Start, c.End)
		}
		if len(c.Events) != tc.steps {
			t.Errorf("slot %v: %d steps, want %d", tc.slot, len(c.Events), tc.steps)
		}
		for _, e := range c.Events {
			if e.Name != "tracer.committed" || !e.Time.Equal(packet.Time(ms(10))) {
				t.Errorf("slot %v: step %s at %v", tc.slot, e.Name, e.Time)
			}
		}
	}
	if bySlot[9].Attributes["tpu.committed"] != false {
		t.Errorf("slot 9's commit span not marked uncommitted: %v", bySlot[9].Attributes)
	}
}
