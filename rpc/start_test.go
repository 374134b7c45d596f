package rpc

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"
)

// Slots committed while Start scans the ledger, after its OnCommit
// listener is registered and before it applies what that listener kept,
// are indexed; so are those committed after Start returns.
func TestStartIndexesSlotsCommittedDuringScan(t *testing.T) {
	b, err := bank.Open(bank.Config{Dir: t.TempDir(), Sync: ledger.NoSync, Genesis: bank.GenesisConfig{Seed: "x", Accounts: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := scheduler.New(scheduler.Config{Workers: 1}, b)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 300; i++ {
		if _, err := s.EndSlot(); err != nil {
			t.Fatal(err)
		}
	}
	// endSlots ends n slots and waits until a listener registered after
	// the server's has seen the last: the server has handled them all.
	var seen atomic.Uint64
	signal := make(chan struct{}, 1)
	listen := func() {
		b.OnCommit(func(r ledger.SlotRecord) {
			seen.Store(r.Slot)
			select {
			case signal <- struct{}{}:
			default:
			}
		})
	}
	endSlots := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if _, err := s.EndSlot(); err != nil {
				t.Fatal(err)
			}
		}
		timeout := time.After(10 * time.Second)
		for seen.Load() < b.Slot()-1 {
			select {
			case <-signal:
			case <-timeout:
				t.Fatalf("slot %d not committed within 10s (last seen %d)", b.Slot()-1, seen.Load())
			}
		}
	}
	scanned = func() { listen(); endSlots(5) }
	defer func() { scanned = nil }()
	srv, err := Start(Config{Addr: "127.0.0.1:0", TPU: netip.MustParseAddrPort("127.0.0.1:9"), Bank: LedgerOf(b.Committed()), Seed: "x", Verifier: testVerifier(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	endSlots(5)
	last := b.Slot() - 1

	srv.mu.RLock()
	defer srv.mu.RUnlock()
	for i := 1; i < len(srv.hashes); i++ {
		if srv.hashes[i].Slot != srv.hashes[i-1].Slot+1 {
			t.Errorf("gap in the rpc blockhash index: slot %d then %d", srv.hashes[i-1].Slot, srv.hashes[i].Slot)
		}
	}
	oldest, newest := srv.hashes[0].Slot, srv.hashes[len(srv.hashes)-1].Slot
	if want := b.Blockhashes()[0].Slot; oldest != want || newest != last {
		t.Errorf("rpc window %d..%d, want the bank's %d..%d", oldest, newest, want, last)
	}
}
