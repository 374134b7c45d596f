package scheduler

import (
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestTransferToReserved: a transfer to each reserved key fails with
// ReadonlyLamportChange (the key is demoted to read-only, as Agave's
// SanitizedMessage::is_writable does), and the payer pays only the fee.
func TestTransferToReserved(t *testing.T) {
	keys := banking.ReservedKeys()
	b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Accounts: len(keys) + 1}})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	start := lamports(b, banktest.Pub(0))
	var txs [][]byte
	for i, k := range keys {
		txs = append(txs, banktest.TransferTx(t, bh, banktest.Key(i), k, 1_000_000))
	}
	for len(txs) > 0 {
		n := min(len(txs), 16)
		s.Submit(banktest.BatchOf(t, pool, txs[:n]...))
		txs = txs[n:]
	}
	drain(t, s)
	checkAccounting(t, s)
	for i, k := range keys {
		v, _ := txview.Parse(banktest.TransferTx(t, bh, banktest.Key(i), k, 1_000_000))
		st, ok := b.Status(bh, v.Signature(0))
		if !ok {
			t.Errorf("%s: no status", base58.Encode(keys[i][:]))
			continue
		}
		if got := st.Err.String(); got != "InstructionError(0, ReadonlyLamportChange)" {
			t.Errorf("%s: %s, want InstructionError(0, ReadonlyLamportChange)", base58.Encode(keys[i][:]), got)
		}
		if got := lamports(b, banktest.Pub(i)); got != start-banking.LamportsPerSignature {
			t.Errorf("%s: payer %d, want %d (fee only)", base58.Encode(keys[i][:]), got, start-banking.LamportsPerSignature)
		}
	}
}

// TestReservedReadLocked: two transactions that ask to write the same
// reserved key take read locks on it and run on two workers at once; the
// same two with an ordinary key conflict.
func TestReservedReadLocked(t *testing.T) {
	clock := banking.Pubkey{0x06, 0xa7, 0xd5, 0x17, 0x18, 0xc7, 0x74, 0xc9, 0x28, 0x56, 0x63, 0x98, 0x69, 0x1d, 0x5e, 0xb6, 0x8b, 0x5e, 0xb8, 0xa3, 0x9b, 0x4b, 0x6d, 0x5c, 0x73, 0x55, 0x5b, 0x21, 0x00, 0x00, 0x00, 0x00} // SysvarC1ock11111111111111111111111111111111
	for _, m := range []Method{Greedy, PrioGraph} {
		for _, c := range []struct {
			name     string
			key      banking.Pubkey
			parallel bool
		}{
			{"reserved", clock, true},
			{"ordinary", banktest.Pub(12), false},
		} {
			t.Run(m.String()+"/"+c.name, func(t *testing.T) {
				b := banktest.OpenBank(t, bank.Config{})
				defer b.Close()
				s := newScheduler(t, Config{Method: m, Workers: 2, MaxQueuedBatches: 2, BatchSize: 1}, b)
				pool, _ := packet.NewPool(packet.Config{})
				bh := b.LatestBlockhash()
				x := banktest.TransferTx(t, bh, banktest.Key(0), c.key, 1_000_000)
				y := banktest.TransferTx(t, bh, banktest.Key(1), c.key, 1_000_000)
				s.Submit(banktest.BatchOf(t, pool, x, y))
				s.Schedule()
				parallel := s.workers.w[0].txs == 1 && s.workers.w[1].txs == 1
				if parallel != c.parallel {
					t.Errorf("on two workers at once: %v, want %v (workers %d, %d)", parallel, c.parallel, s.workers.w[0].txs, s.workers.w[1].txs)
				}
				drain(t, s)
				checkAccounting(t, s)
			})
		}
	}
}
