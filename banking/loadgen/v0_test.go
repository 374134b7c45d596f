package loadgen

import (
	"crypto/ed25519"
	"errors"
	"slices"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestBuildV0 checks that V0Fraction sends about that share as v0
// transfers whose recipient is loaded through the genesis table, that
// the kinds are those of the same load without it, and that a bank made
// from the same genesis executes every valid one.
func TestBuildV0(t *testing.T) {
	const accounts = 300 // more than the table holds: recipients wrap into it
	b, err := bank.Open(bank.Config{Genesis: bank.GenesisConfig{Seed: seed, Accounts: accounts}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := Config{Seed: seed, Accounts: accounts, Blockhash: b.LatestBlockhash(), Count: 400, InvalidFraction: 0.1, RandSeed: 3}
	legacy, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.V0Fraction = 0.5
	l, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Kinds, legacy.Kinds) {
		t.Fatal("V0Fraction changed the kinds")
	}
	table, addrs := bank.GenesisTable(seed)
	var v0, valid int
	for i, tx := range l.Txs {
		if l.Kinds[i] == Malformed || l.Kinds[i] == Duplicate {
			continue
		}
		v, err := txview.Parse(tx)
		if err != nil {
			t.Fatalf("tx %d: %v", i, err)
		}
		if (v.Version() == txview.V0) != l.V0[i] {
			t.Fatalf("tx %d: version %v, V0 %v", i, v.Version(), l.V0[i])
		}
		if !l.V0[i] {
			continue
		}
		v0++
		it := v.Lookups()
		lk, ok := it.Next()
		if !ok || *lk.Table != table || len(lk.Writable) != 1 || len(lk.Readonly) != 0 || int(lk.Writable[0]) >= accounts {
			t.Fatalf("tx %d: lookups %d, %+v", i, v.NumLookups(), lk)
		}
		if idx := int(lk.Writable[0]); addrs[idx] != txview.PublicKey(bank.GenesisKey(seed, idx)) {
			t.Fatalf("tx %d: recipient %d is not genesis account %d", i, idx, idx)
		}
	}
	if v0 < 140 || v0 > 260 {
		t.Fatalf("%d of ~360 parsed transactions are v0, want about half", v0)
	}

	// Executed against the genesis they were built for.
	s, err := scheduler.New(scheduler.Config{Workers: 1}, b)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pool, _ := packet.NewPool(packet.Config{})
	outcomes := map[packet.Outcome]int{}
	s.SetOnDone(func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { outcomes[o]++ })
	for i, tx := range l.Txs {
		if l.Kinds[i] != Valid {
			continue
		}
		valid++
		batch := pool.Get()
		batch.Next().Fill(tx)
		s.Submit(batch)
	}
	if err := scheduler.NewDriver(s, scheduler.DriverConfig{}).Drain(); err != nil {
		t.Fatal(err)
	}
	if outcomes[packet.OutcomeExecutedOK] != valid {
		t.Fatalf("%d valid, outcomes %v, errors %v", valid, outcomes, s.Stats().Errors)
	}

	if _, err := Build(Config{Keys: []ed25519.PrivateKey{bank.GenesisKey(seed, 0), bank.GenesisKey(seed, 1)}, Count: 1, V0Fraction: 0.5}); !errors.Is(err, ErrConfig) {
		t.Fatalf("V0Fraction with Keys: %v", err)
	}
}
