package stages_test

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/packet/mmsg"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/txview"
)

// slowRecorder is a Recorder that holds each batch until hold newer ones
// have arrived (or Close), as a recorder behind on its disk would, and
// then checks that the bytes it saw at arrival are still there before it
// releases its reference: a batch returned to the pool early is poisoned
// (invariants build) or refilled, and the check sees it.
type slowRecorder struct {
	hold int

	mu        sync.Mutex
	held      []heldBatch
	batches   int
	packets   int   // live packets recorded
	minRefs   int32 // the fewest references a batch had on arrival
	maxRefs   int32 // the most
	changed   int   // packets whose bytes changed while held
	lastArr   int64 // arrivals never go back
	backwards int   // arrivals that went back
	slots     []uint64
	steps     map[scheduler.EventKind]int
}

type heldBatch struct {
	b    *packet.Batch
	data []string // the live packets' bytes at arrival
}

func newSlowRecorder(hold int) *slowRecorder {
	return &slowRecorder{hold: hold, minRefs: 1 << 30, steps: map[scheduler.EventKind]int{}}
}

func (r *slowRecorder) Batch(b *packet.Batch, arrival int64) {
	refs := b.Refs()
	h := heldBatch{b: b}
	for i := range b.Packets() {
		if p := b.At(i); !p.Discarded() {
			h.data = append(h.data, string(p.Data()))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches++
	r.packets += len(h.data)
	r.minRefs, r.maxRefs = min(r.minRefs, refs), max(r.maxRefs, refs)
	if arrival < r.lastArr {
		r.backwards++
	}
	r.lastArr = arrival
	r.held = append(r.held, h)
	for len(r.held) > r.hold {
		r.release(r.held[0])
		r.held = r.held[1:]
	}
}

func (r *slowRecorder) Slot(slot uint64, at int64) {
	r.mu.Lock()
	r.slots = append(r.slots, slot)
	r.mu.Unlock()
}

func (r *slowRecorder) Step(step scheduler.EventKind, _ uint64, _ int64) {
	r.mu.Lock()
	r.steps[step]++
	r.mu.Unlock()
}

// release checks h's bytes and releases it; r.mu is held.
func (r *slowRecorder) release(h heldBatch) {
	k := 0
	for i := range h.b.Packets() {
		if p := h.b.At(i); !p.Discarded() {
			if string(p.Data()) != h.data[k] {
				r.changed++
			}
			k++
		}
	}
	h.b.Release()
}

// Close releases what is still held.
func (r *slowRecorder) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.held {
		r.release(h)
	}
	r.held = nil
}

// forwardSink reads datagrams on 127.0.0.1 and counts those that are
// among the load's transactions.
type forwardSink struct {
	conn  *net.UDPConn
	known map[string]bool
	got   chan string
	// dropped is the datagrams the kernel dropped at the sink's socket
	// (a full buffer: its reader stalled), as of the last one read;
	// 0 where the kernel's count is unknown (mmsg.Conn.Dropped).
	dropped atomic.Uint64
}

func newForwardSink(t *testing.T) *forwardSink {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	mc, err := mmsg.New(c, 16)
	if err != nil {
		t.Fatal(err)
	}
	_ = mc.CountDrops() // best effort: Linux only
	s := &forwardSink{conn: c, known: map[string]bool{}, got: make(chan string, 1<<16)}
	go func() {
		ds := make([]mmsg.Datagram, 16)
		for i := range ds {
			ds[i].Buf = make([]byte, 2048)
		}
		for {
			n, err := mc.Read(ds)
			s.dropped.Store(mc.Dropped())
			for _, d := range ds[:n] {
				s.got <- string(d.Buf[:min(d.N, len(d.Buf))])
			}
			if err != nil {
				close(s.got)
				return
			}
		}
	}()
	t.Cleanup(func() { c.Close() })
	return s
}

// expect sets the datagrams the sink may get; call it before any is sent.
func (s *forwardSink) expect(txs [][]byte) {
	for _, tx := range txs {
		s.known[string(tx)] = true
	}
}

func (s *forwardSink) addr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// wait reads n datagrams, each a distinct transaction of the load. A
// datagram the kernel dropped at the sink's socket fails it at once,
// named, once a later one shows the drop.
func (s *forwardSink) wait(t *testing.T, n uint64) {
	t.Helper()
	seen := map[string]bool{}
	timeout := time.After(20 * time.Second)
	for uint64(len(seen)) < n {
		select {
		case d := <-s.got:
			if !s.known[d] || seen[d] {
				t.Fatalf("the sink got a datagram that is not a new transaction of the load (%d bytes)", len(d))
			}
			seen[d] = true
			if dr := s.dropped.Load(); dr > 0 {
				t.Fatalf("the sink's socket dropped %d datagrams (its reader stalled); got %d of %d", dr, len(seen), n)
			}
		case <-timeout:
			t.Fatalf("the sink got %d of %d forwarded packets (its socket dropped %d, as of the last one read)", len(seen), n, s.dropped.Load())
		}
	}
}

// TestFanoutAllConsumers runs the whole graph with banking, a recorder
// that holds its batches a while, and the forwarder to a 127.0.0.1 sink,
// in both handoffs. Each consumer sees every verified packet once; with
// refcount they share one batch (a recorder's batch has other references
// on arrival, and nothing is copied), with copy each has its own; after
// the drain and the recorder's last release every batch is back in the
// pool, with no double release and no held byte changed (the invariants
// build poisons released batches, and panics on a double release); each
// transaction was parsed once (txview.Parses, invariants build).
func TestFanoutAllConsumers(t *testing.T) {
	for _, h := range []scheduler.Handoff{scheduler.HandoffRefcount, scheduler.HandoffCopy} {
		t.Run("handoff="+h.String(), func(t *testing.T) {
			const n = 400
			rec := newSlowRecorder(8)
			cfg := stages.Config{Recorder: rec}
			cfg.Banking.Scheduler.Handoff = h
			sink := newForwardSink(t)
			cfg.Forward = stages.ForwardConfig{To: sink.addr(), Rate: stages.MaxForwardRate}
			g := startGraph(t, cfg)
			load, err := loadgen.Build(loadgen.Config{Seed: seed, Accounts: 64, Blockhash: latestBlockhash(t, g), Count: n})
			if err != nil {
				t.Fatal(err)
			}
			sink.expect(load.Txs)
			parses := txview.Parses()
			if _, err := load.Send(loadgen.SendConfig{Target: g.Addr(), Rate: 4000}); err != nil {
				t.Fatal(err)
			}
			waitSettled(t, g, n)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := g.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			parses = txview.Parses() - parses
			s, _ := g.Snapshot()
			rec.Close()

			if !s.AccountingOK() || s.Received != n || s.Outcomes[packet.OutcomeExecutedOK] != n || s.Verified != n {
				t.Fatalf("banking: received %d, verified %d, outcomes %v, in transit %d", s.Received, s.Verified, s.Outcomes, s.InTransit)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.packets != n || rec.changed != 0 || rec.backwards != 0 {
				t.Fatalf("recorder: %d packets of %d, %d changed while held, %d arrivals out of order", rec.packets, n, rec.changed, rec.backwards)
			}
			// The first slot's start, then one per slot end, in order.
			if len(rec.slots) < 2 || uint64(len(rec.slots)) != s.Slots+1 {
				t.Fatalf("recorder: slot starts %v for %d slots ended", rec.slots, s.Slots)
			}
			for i := 1; i < len(rec.slots); i++ {
				if rec.slots[i] != rec.slots[i-1]+1 {
					t.Fatalf("recorder: slot starts %v skip or go back", rec.slots)
				}
			}
			// Every other driver call: the workers' batches back, the
			// drain's flush, the commits it waited for.
			if st := rec.steps; st[scheduler.EventCompletion] == 0 || st[scheduler.EventFlush] == 0 || st[scheduler.EventCommitted] == 0 {
				t.Fatalf("recorder: steps %v", st)
			}
			f := s.Forward
			if f == nil || f.Offered != n || f.Forwarded != n || f.Pending() != 0 {
				t.Fatalf("forwarder: %+v", f)
			}
			sink.wait(t, f.Forwarded)
			if h == scheduler.HandoffCopy {
				if rec.maxRefs != 1 || s.Copies != uint64(3*rec.batches) {
					t.Fatalf("copy: a recorder's batch had %d references on arrival; %d copies for %d batches and 3 consumers", rec.maxRefs, s.Copies, rec.batches)
				}
			} else if rec.minRefs < 2 || s.Copies != 0 {
				t.Fatalf("refcount: a recorder's batch had %d references on arrival (the forwarder's is taken before), %d copies", rec.minRefs, s.Copies)
			}
			if ps := g.Pool().Stats(); ps.Live != 0 || ps.DoubleReleases != 0 || ps.Leaks != 0 {
				t.Fatalf("pool after the drain and the recorder's releases: %+v", ps)
			}
			if txview.Counting && parses != n {
				t.Fatalf("%d transactions were parsed %d times end to end, want once each", n, parses)
			}
		})
	}
}

// TestParseOnce: from the socket to the commit, through fetch, sigverify
// and banking, each transaction is parsed exactly once, in both handoffs.
// The count needs the invariants build (txview.Parses).
func TestParseOnce(t *testing.T) {
	if !txview.Counting {
		t.Skip("txview.Parses counts only with -tags invariants")
	}
	for _, h := range []scheduler.Handoff{scheduler.HandoffRefcount, scheduler.HandoffCopy} {
		t.Run("handoff="+h.String(), func(t *testing.T) {
			const n = 300
			cfg := stages.Config{}
			cfg.Banking.Scheduler.Handoff = h
			g := startGraph(t, cfg)
			load, err := loadgen.Build(loadgen.Config{Seed: seed, Accounts: 64, Blockhash: latestBlockhash(t, g), Count: n})
			if err != nil {
				t.Fatal(err)
			}
			before := txview.Parses()
			if _, err := load.Send(loadgen.SendConfig{Target: g.Addr(), Rate: 4000}); err != nil {
				t.Fatal(err)
			}
			waitSettled(t, g, n)
			s := stop(t, g)
			if got := txview.Parses() - before; got != n || s.Executed() != n {
				t.Fatalf("%d transactions executed, %d parses; want %d and one parse each", s.Executed(), got, n)
			}
		})
	}
}
