package bankingtrace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
)

// recordLoad writes a trace of a loadgen load as the banking stage would
// have received it: packets sigverify rejects marked discarded, batches
// of batchSize, a slot start every slotEvery batches. The bank's cost
// limit is low, so that some transactions wait for a later slot.
func recordLoad(t testing.TB, dir string, count, batchSize, slotEvery int) {
	t.Helper()
	bankCfg := bank.Config{Genesis: bank.GenesisConfig{Seed: "replay", Accounts: 40, Lamports: 3_000_000, BlockhashSeed: "replay"},
		BlockCostLimit: 150_000, AccountCostLimit: 60_000}
	bank, err := bank.Open(bankCfg) // in memory: for the genesis blockhash
	if err != nil {
		t.Fatal(err)
	}
	bh := bank.LatestBlockhash()
	bankCfg.Genesis = bank.Genesis() // its random BlockhashSeed: replay rebuilds the same blockhashes
	bank.Close()
	load, err := loadgen.Build(loadgen.Config{Seed: "replay", Accounts: 40, Blockhash: bh, Count: count,
		Contention: loadgen.ContentionSameBatchOnly, InvalidFraction: 0.3, BatchSize: batchSize, Lamports: 100_000, RandSeed: 7})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(Config{Dir: dir, Bank: bankCfg})
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t)
	slot := uint64(1)
	at := int64(1_000_000)
	if err := w.Slot(slot, at); err != nil {
		t.Fatal(err)
	}
	for i, n := 0, 0; i < len(load.Txs); n++ {
		if n > 0 && n%slotEvery == 0 {
			slot++
			at += 1000
			w.Slot(slot, at)
		}
		b := pool.Get()
		for ; i < len(load.Txs) && !b.Full() && b.Len() < batchSize; i++ {
			p := b.Next()
			p.Fill(load.Txs[i])
			p.Meta.RecvNanos = at - 500
			switch load.Kinds[i] {
			case loadgen.BadSignature:
				p.Discard(packet.OutcomeBadSignature)
			case loadgen.Duplicate:
				p.Discard(packet.OutcomeDuplicate)
			}
		}
		at += 100
		if err := w.Batch(b, at); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReplayDeterministic(t *testing.T) {
	dir := t.TempDir()
	recordLoad(t, dir, 3000, 64, 4)
	for _, method := range []scheduler.Method{scheduler.Greedy, scheduler.PrioGraph, scheduler.Unbatched} {
		for _, handoff := range []scheduler.Handoff{scheduler.HandoffRefcount, scheduler.HandoffCopy} {
			t.Run(method.String()+"/"+handoff.String(), func(t *testing.T) {
				var runs [2]ReplayResult
				for i := range runs {
					res, err := Replay(ReplayConfig{Dir: dir, Ledger: filepath.Join(t.TempDir(), "ledger"), Sync: ledger.NoSync,
						Scheduler: scheduler.Config{Method: method, Handoff: handoff, Workers: 3, BatchSize: 8}})
					if err != nil {
						t.Fatal(err)
					}
					runs[i] = res
				}
				a, b := runs[0], runs[1]
				st := a.Stats
				var sum uint64
				for _, c := range st.Outcomes {
					sum += c
				}
				if st.Received != sum || st.Buffered != 0 || a.LiveBatches != 0 {
					t.Fatalf("accounting: received %d, outcomes %d, buffered %d, live batches %d", st.Received, sum, st.Buffered, a.LiveBatches)
				}
				if st.Outcomes[packet.OutcomeExecutedOK] == 0 || st.Outcomes[packet.OutcomeFeePayerCannotPay] == 0 {
					t.Fatalf("outcomes %v: want executed and unfunded payers", st.Outcomes)
				}
				if a.Slot <= 3000/64/4 {
					t.Fatalf("committed through slot %d: the cost limit deferred nothing", a.Slot)
				}
				if a.AccountsHash != b.AccountsHash || a.Stats.Outcomes != b.Stats.Outcomes || a.Slot != b.Slot || a.Stats.Slots != b.Stats.Slots {
					t.Fatalf("two replays differ:\n%x %v slot %d\n%x %v slot %d", a.AccountsHash, a.Stats.Outcomes, a.Slot, b.AccountsHash, b.Stats.Outcomes, b.Slot)
				}
				if a.Batches != 47 || a.Packets != 3000 {
					t.Fatalf("read %d batches, %d packets", a.Batches, a.Packets)
				}
				// Sigverify's discards are in the trace, never in banking.
				if a.Discarded == 0 || a.Packets != a.Discarded+st.Received {
					t.Fatalf("%d packets: %d discarded by sigverify, %d received by banking", a.Packets, a.Discarded, st.Received)
				}
			})
		}
	}
}

// A replay stopped by a damaged record mid-trace gives back every batch
// it took, and accounts for every packet it handed to banking: executed
// or dropped, none left in the buffer.
func TestReplayDamagedReleases(t *testing.T) {
	dir := t.TempDir()
	recordLoad(t, dir, 3000, 64, 4)
	path := newestFile(t, dir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)*3/4] ^= 0x40
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Replay(ReplayConfig{Dir: dir, Ledger: filepath.Join(t.TempDir(), "ledger"), Sync: ledger.NoSync,
		Scheduler: scheduler.Config{Workers: 2, BatchSize: 8}})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("replay of a damaged trace: %v, want ErrCorrupt", err)
	}
	if res.Batches == 0 {
		t.Fatal("the damage stopped the replay before its first batch: nothing was held")
	}
	st := res.Stats
	var sum uint64
	for _, c := range st.Outcomes {
		sum += c
	}
	if res.LiveBatches != 0 || st.Received == 0 || st.Received != sum || st.Buffered != 0 {
		t.Fatalf("after %d batches: %d live batches, received %d, outcomes %d, buffered %d",
			res.Batches, res.LiveBatches, st.Received, sum, st.Buffered)
	}
}

func TestReplayRefusesUsedLedger(t *testing.T) {
	dir := t.TempDir()
	recordLoad(t, dir, 100, 64, 1)
	ledger := filepath.Join(t.TempDir(), "ledger")
	if _, err := Replay(ReplayConfig{Dir: dir, Ledger: ledger}); err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(ReplayConfig{Dir: dir, Ledger: ledger}); !errors.Is(err, ErrReplay) {
		t.Fatalf("second replay into one ledger: %v, want ErrReplay", err)
	}
}

func TestReplaySpeed(t *testing.T) {
	dir := t.TempDir()
	recordLoad(t, dir, 640, 64, 2) // 10 batches, 4,900 ns from first to last
	fast, err := Replay(ReplayConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// At a ten-thousandth of the recorded pace they take 49 ms.
	slow, err := Replay(ReplayConfig{Dir: dir, Speed: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	if slow.Elapsed < 49*time.Millisecond {
		t.Fatalf("paced replay took %v, want at least 49ms", slow.Elapsed)
	}
	if slow.AccountsHash != fast.AccountsHash || slow.Stats.Outcomes != fast.Stats.Outcomes {
		t.Fatal("the pace changed the outcome")
	}
}
