package stages_test

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
)

// gateBackend is a verifier backend that holds every check until
// released, so that a test can keep batches inside sigverify.
type gateBackend struct {
	sigverify.Backend
	entered     chan struct{}
	release     chan struct{}
	enterOnce   sync.Once
	releaseOnce sync.Once
}

func (b *gateBackend) Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool {
	b.enterOnce.Do(func() { close(b.entered) })
	<-b.release
	return b.Backend.Verify(pubkey, msg, sig)
}

func (b *gateBackend) open() { b.releaseOnce.Do(func() { close(b.release) }) }

// TestLedgerFailureDrainsSigverify: when the ledger fails, the graph
// stops with the failure, and sigverify is still drained: the batches it
// holds are checked and handed to banking, which books each with an
// outcome, and go back to the pool. Graph.stop skipped sigverify's drain
// once the graph had failed; then the batches still queued in
// sigverify's mailbox were lost (issue 26 item 5: accounting ok false on
// a full disk; TestLedgerFailsWhileRunning in cmd/tpu failed on it in
// CI).
func TestLedgerFailureDrainsSigverify(t *testing.T) {
	voi, err := sigverify.NewBackend("voi")
	if err != nil {
		t.Fatal(err)
	}
	gate := &gateBackend{Backend: voi, entered: make(chan struct{}), release: make(chan struct{})}
	defer gate.open()
	disk := &banktest.SickDisk{Err: syscall.ENOSPC}
	cfg := stages.Config{Banking: stages.BankingConfig{Bank: bank.Config{Dir: t.TempDir(), FS: errorfs.Wrap(vfs.Default, disk)}}}
	cfg.Sigverify.Verify.Backend = gate
	g := startGraph(t, cfg)
	load, err := loadgen.Build(loadgen.Config{Seed: seed, Accounts: 64, Blockhash: latestBlockhash(t, g), Count: 200, Lamports: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := load.Send(loadgen.SendConfig{Target: g.Addr(), Rate: 5000}); err != nil || res.Sent != 200 {
		t.Fatalf("sent %d: %v", res.Sent, err)
	}
	select {
	case <-gate.entered: // sigverify holds a batch
	case <-time.After(20 * time.Second):
		t.Fatal("sigverify never began a check")
	}
	disk.On.Store(true)
	for deadline := time.Now().Add(20 * time.Second); g.Err() == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ledger did not fail")
		}
	}
	// Let the checks go on once Stop is under way. With the fix Stop
	// waits for them in sigverify's drain whenever they come; the delay
	// lets a Stop without it get past sigverify first, which is what lost
	// the batches. A slow machine can only make the test pass without
	// the fix, never fail with it.
	time.AfterFunc(300*time.Millisecond, gate.open)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.Stop(ctx); err == nil {
		t.Fatal("the graph stopped cleanly on a failed ledger")
	}
	s, err := g.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !s.AccountingOK() || s.Live != 0 {
		t.Fatalf("after a ledger failure: accounting ok %v (received %d, in transit %d, outcomes %v, buffered %d), %d batches live",
			s.AccountingOK(), s.Received, s.InTransit, s.Outcomes, s.Buffered, s.Live)
	}
	// Sigverify drained: every packet it held was checked and handed to
	// banking (which dropped it, as it can commit nothing), rather than
	// dropped by sigverify's stop. A stop that skips the drain also loses
	// the batches still in sigverify's mailbox: a stop is a system
	// message, which protoactor delivers before the user messages queued
	// ahead of it.
	if s.Received != 200 || s.Verified != 200 {
		t.Fatalf("received %d, sigverify handed on %d: it was stopped without a drain", s.Received, s.Verified)
	}
	// What reached banking after the failure never ran, and says why:
	// ledger_failed, not shutdown (the batch sigverify held came after
	// the failure, so there is some).
	if s.Outcomes[packet.OutcomeShutdown] != 0 || s.Outcomes[packet.OutcomeLedgerFailed] == 0 {
		t.Fatalf("after a ledger failure: shutdown %d, ledger_failed %d; want 0 and more than 0 (outcomes %v)",
			s.Outcomes[packet.OutcomeShutdown], s.Outcomes[packet.OutcomeLedgerFailed], s.Outcomes)
	}
}
