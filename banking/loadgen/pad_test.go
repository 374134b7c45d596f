package loadgen

import (
	"errors"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestBuildSize: Size pads every transaction, legacy and v0, to exactly
// that many bytes with a memo, at every size from the smallest that
// holds one (across the memo length's compact-u16 growing a byte) to a
// full packet, and a bank made from the same genesis executes every one
// (the memo is UTF-8 and the compute-unit limit covers it).
func TestBuildSize(t *testing.T) {
	const accounts = 300
	b, err := bank.Open(bank.Config{Genesis: bank.GenesisConfig{Seed: seed, Accounts: accounts}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := Config{Seed: seed, Accounts: accounts, Blockhash: b.LatestBlockhash(), Count: 8, V0Fraction: 0.5, RandSeed: 5}
	plain, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	smallest := 0
	for _, tx := range plain.Txs {
		smallest = max(smallest, len(tx)+32+3) // a memo's key and framing, no data
	}
	var sizes []int
	for s := smallest; s <= smallest+4; s++ {
		sizes = append(sizes, s)
	}
	for s := smallest + 124; s <= smallest+130; s++ { // the data's length takes 2 bytes from 128
		sizes = append(sizes, s)
	}
	sizes = append(sizes, txview.PacketSize)

	s, err := scheduler.New(scheduler.Config{Workers: 1}, b)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pool, _ := packet.NewPool(packet.Config{})
	outcomes := map[packet.Outcome]int{}
	s.SetOnDone(func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { outcomes[o]++ })
	sent := 0
	for _, size := range sizes {
		cfg.Size, cfg.Lamports = size, uint64(size)*100 // distinct bytes at every size
		l, err := Build(cfg)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		for i, tx := range l.Txs {
			if len(tx) != size {
				t.Fatalf("size %d: tx %d is %d bytes", size, i, len(tx))
			}
			v, err := txview.Parse(tx)
			if err != nil {
				t.Fatalf("size %d: tx %d: %v", size, i, err)
			}
			if (v.Version() == txview.V0) != l.V0[i] {
				t.Fatalf("size %d: tx %d: version %v, V0 %v", size, i, v.Version(), l.V0[i])
			}
			it := v.Instructions()
			var last txview.Instruction
			for in, ok := it.Next(); ok; in, ok = it.Next() {
				last = in
			}
			if *v.StaticKey(int(last.ProgramIndex)) != txview.MemoProgram {
				t.Fatalf("size %d: tx %d: the last instruction is not a memo", size, i)
			}
			batch := pool.Get()
			batch.Next().Fill(tx)
			s.Submit(batch)
			sent++
		}
	}
	if err := scheduler.NewDriver(s, scheduler.DriverConfig{}).Drain(); err != nil {
		t.Fatal(err)
	}
	if outcomes[packet.OutcomeExecutedOK] != sent {
		t.Fatalf("%d sent, outcomes %v, errors %v", sent, outcomes, s.Stats().Errors)
	}

	for _, size := range []int{-1, smallest - 1, txview.PacketSize + 1} {
		cfg.Size = size
		if _, err := Build(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("size %d: %v, want ErrConfig", size, err)
		}
	}
}
