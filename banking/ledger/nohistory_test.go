package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"
	"github.com/tpugo/tpu/banking/scheduler/schedtest"
	"github.com/tpugo/tpu/packet"
)

// TestNoTxHistory: with NoTxHistory the bank keeps none, and says so.
func TestNoTxHistory(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{NoTxHistory: true})
	defer b.Close()
	committed := banktest.Commits(b)
	s := schedtest.New(t, scheduler.Config{}, b)
	pool, _ := packet.NewPool(packet.Config{})
	tx := banktest.TransferTx(t, b.LatestBlockhash(), banktest.Key(0), banktest.Pub(1), 1_000_000)
	s.Submit(banktest.BatchOf(t, pool, tx))
	slot := b.Slot()
	schedtest.Drain(t, s)
	schedtest.EndSlot(t, s)
	banktest.WaitCommitted(t, committed, slot)
	if _, _, err := b.Ledger().Transaction((*[64]byte)(tx[1:65])); !errors.Is(err, ledger.ErrNoHistory) {
		t.Fatalf("Transaction: %v", err)
	}
	if _, err := b.Ledger().SignaturesFor(context.Background(), banktest.Pub(1), nil, nil, 10, 0); !errors.Is(err, ledger.ErrNoHistory) {
		t.Fatalf("SignaturesFor: %v", err)
	}
	n := 0
	b.Ledger().Scan([]byte{ledger.PrefixHistory}, func(k, v []byte) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d history records with NoTxHistory", n)
	}
}
