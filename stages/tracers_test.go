package stages

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// tracerEvents runs f on a tracers with every span recorded and returns
// the tracer events it made, as "event sig outcome slot", sorted.
func tracerEvents(t *testing.T, f func(tr *tracers)) []string {
	t.Helper()
	var buf bytes.Buffer
	prov, err := trace.Setup(context.Background(), trace.Config{SampleRatio: 1, TraceWriter: &buf})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTracers(prov.Hop("banking.execute"), prov.Hop("banking.commit"))
	f(tr)
	if err := prov.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, err := trace.ReadSpans(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range spans {
		for _, e := range s.Events {
			line := []string{e.Name, s.Name}
			for _, k := range []string{trace.TracerSigKey, "tpu.outcome", "tpu.slot"} {
				if v, ok := e.Attributes[k]; ok {
					line = append(line, fmt.Sprint(v))
				}
			}
			got = append(got, strings.Join(line, " "))
		}
	}
	sort.Strings(got)
	return got
}

func sigOf(b byte) *[64]byte {
	var s [64]byte
	s[0] = b
	return &s
}

func TestTracers(t *testing.T) {
	parent := trace.SpanContext{TraceID: [16]byte{1}, SpanID: [8]byte{2}, Flags: 1}
	a, b, c, d := sigOf(0xa), sigOf(0xb), sigOf(0xc), sigOf(0xd)
	sa, sb, sc := trace.TracerSig(a[:]), trace.TracerSig(b[:]), trace.TracerSig(c[:])
	for _, tc := range []struct {
		name    string
		run     func(tr *tracers)
		want    []string
		live    int // left in tracers.live
		pending int // slots left in tracers.pending
	}{{
		name: "buffered, done, committed",
		run: func(tr *tracers) {
			tr.buffered(a, parent)
			tr.done(a, packet.OutcomeExecutedOK, 7)
			tr.committed(7)
		},
		want: []string{
			"tracer.committed banking.commit " + sa + " executed_ok 7",
			"tracer.done banking.execute " + sa + " executed_ok",
		},
	}, {
		name: "not committed before its slot is",
		run: func(tr *tracers) {
			tr.buffered(a, parent)
			tr.done(a, packet.OutcomeExecutedFailed, 7)
			tr.committed(6)
		},
		want:    []string{"tracer.done banking.execute " + sa + " executed_failed"},
		pending: 1,
	}, {
		name: "a later slot's commit commits the earlier ones",
		run: func(tr *tracers) {
			tr.buffered(a, parent)
			tr.buffered(b, parent)
			tr.done(a, packet.OutcomeExecutedOK, 7)
			tr.done(b, packet.OutcomeExecutedOK, 8)
			tr.committed(9)
			tr.committed(10) // nothing twice
		},
		want: []string{
			"tracer.committed banking.commit " + sa + " executed_ok 7",
			"tracer.committed banking.commit " + sb + " executed_ok 8",
			"tracer.done banking.execute " + sa + " executed_ok",
			"tracer.done banking.execute " + sb + " executed_ok",
		},
	}, {
		name: "dropped: done, never committed",
		run: func(tr *tracers) {
			tr.buffered(c, parent)
			tr.done(c, packet.OutcomeBlockhashNotFound, 7)
			tr.committed(7)
		},
		want: []string{"tracer.done banking.execute " + sc + " " + packet.OutcomeBlockhashNotFound.String()},
	}, {
		name: "a duplicate's drop leaves the original to finish",
		run: func(tr *tracers) {
			tr.buffered(a, parent)
			tr.buffered(a, trace.SpanContext{TraceID: [16]byte{9}, SpanID: [8]byte{9}, Flags: 1})
			tr.done(a, packet.OutcomeAlreadyProcessed, 7)
			tr.done(a, packet.OutcomeExecutedOK, 7)
			tr.committed(7)
		},
		want: []string{
			"tracer.committed banking.commit " + sa + " executed_ok 7",
			"tracer.done banking.execute " + sa + " " + packet.OutcomeAlreadyProcessed.String(),
			"tracer.done banking.execute " + sa + " executed_ok",
		},
	}, {
		name: "not a tracer, or still buffered",
		run: func(tr *tracers) {
			tr.buffered(d, parent)
			tr.done(b, packet.OutcomeExecutedOK, 7)
			tr.committed(7)
		},
		want: nil,
		live: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var live, pending int
			got := tracerEvents(t, func(tr *tracers) {
				tc.run(tr)
				live, pending = len(tr.live), len(tr.pending)
			})
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if live != tc.live || pending != tc.pending {
				t.Errorf("%d tracers live, %d slots pending; want %d, %d", live, pending, tc.live, tc.pending)
			}
		})
	}
}
