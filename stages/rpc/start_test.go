package rpc

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking"
)

// Slots committed while Start scans the ledger, before it registers its
// OnCommit listener, are never indexed.
func TestStartIndexesSlotsCommittedDuringScan(t *testing.T) {
	b, err := banking.Open(banking.Config{Dir: t.TempDir(), Sync: banking.NoSync, Genesis: banking.GenesisConfig{Seed: "x", Accounts: 4}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := banking.NewScheduler(banking.SchedulerConfig{Workers: 1}, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if _, err := s.EndSlot(); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the banking actor: slots keep ending
		defer close(done)
		for !stop.Load() {
			s.EndSlot()
			time.Sleep(20 * time.Microsecond)
		}
	}()
	srv, err := Start(Config{Addr: "127.0.0.1:0", TPU: netip.MustParseAddrPort("127.0.0.1:9"), Bank: b, Seed: "x"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	stop.Store(true)
	<-done
	for b.CommittedSlot() < b.Slot()-1 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	srv.mu.RLock()
	gaps := 0
	for i := 1; i < len(srv.hashes); i++ {
		if srv.hashes[i].Slot != srv.hashes[i-1].Slot+1 {
			gaps++
			t.Logf("gap: slot %d then %d", srv.hashes[i-1].Slot, srv.hashes[i].Slot)
		}
	}
	oldest := srv.hashes[0].Slot
	srv.mu.RUnlock()
	t.Logf("rpc window oldest %d, bank window oldest %d", oldest, b.Blockhashes()[0].Slot)
	srv.Close()
	s.Close()
	b.Close()
	if gaps > 0 {
		t.Fatalf("%d gaps in the rpc blockhash index", gaps)
	}
}
