package bankingtrace

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
)

// driveRecorded runs a load through a Driver as the banking stage would,
// with the calls interleaved at random (seed): each batch, then now and
// then the completions back so far (the workers run meanwhile), a tick,
// all recorded through a Recorder (Event). It ends with the buffer empty
// and the last slot ended, and returns the bank's accounts hash and last
// slot.
func driveRecorded(t *testing.T, dir string, seed uint64) (banking [32]byte, last uint64) {
	t.Helper()
	bankCfg := bank.Config{Genesis: bank.GenesisConfig{Seed: "exact", Accounts: 40, Lamports: 3_000_000, BlockhashSeed: "exact"},
		BlockCostLimit: 150_000, AccountCostLimit: 60_000}
	b, err := bank.Open(bankCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	load, err := loadgen.Build(loadgen.Config{Seed: "exact", Accounts: 40, Blockhash: b.LatestBlockhash(), Count: 1500,
		Contention: loadgen.ContentionFull, InvalidFraction: 0.2, BatchSize: 64, Lamports: 100_000, RandSeed: seed})
	if err != nil {
		t.Fatal(err)
	}
	scfg := scheduler.Config{Workers: 3, MaxQueuedBatches: 2, BatchSize: 16}
	rec, err := NewRecorder(Config{Dir: dir, Bank: bankCfg, Scheduler: scfg, Driven: true, Queue: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := scheduler.New(scfg, b)
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	drv := scheduler.NewDriver(sched, scheduler.DriverConfig{OnEvent: func(e scheduler.Event) {
		if e.Kind == scheduler.EventBatch {
			e.Batch.Retain()
		}
		rec.Event(e)
	}})
	rec.Slot(b.Slot(), packet.Now())
	rng := rand.New(rand.NewPCG(seed, 1))
	pool := newPool(t)
	for i := 0; i < len(load.Txs); {
		pb := pool.Get()
		for ; i < len(load.Txs) && !pb.Full(); i++ {
			p := pb.Next()
			p.Fill(load.Txs[i])
			p.Meta.RecvNanos = packet.Now()
			if load.Kinds[i] == loadgen.BadSignature || load.Kinds[i] == loadgen.Duplicate {
				p.Discard(packet.OutcomeBadSignature)
			}
		}
		drv.OnBatch(pb)
		switch rng.IntN(4) {
		case 0:
			drv.Poll()
		case 1:
			drv.Await()
		case 2:
			drv.OnTick() // a slot end, pending while work is in flight
		}
	}
	if err := drv.Drain(); err != nil {
		t.Fatal(err)
	}
	if err := drv.EndSlot(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if st := rec.Stats(); st.Dropped+st.DroppedSlots != 0 || st.Steps == 0 {
		t.Fatalf("recorder: %+v", st)
	}
	if st := sched.Stats(); st.Check() != nil || st.Buffered != 0 {
		t.Fatalf("the recording's scheduler: %+v", st)
	}
	return b.AccountsHash(), b.Slot() - 1
}

// TestReplayExact: a replay of a trace recorded through the Driver's
// events, with the recorded scheduler, makes the same calls and reaches
// the recorded bank's accounts and slot, whatever the interleaving the
// recording had; every slot start it makes is the recorded one (else it
// would say it is not exact). A replay with a scheduler of its own is
// told apart.
func TestReplayExact(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		dir := t.TempDir()
		hash, last := driveRecorded(t, dir, seed)
		res, err := Replay(ReplayConfig{Dir: dir, Ledger: filepath.Join(t.TempDir(), "ledger"), Sync: ledger.NoSync})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Exact || res.Inexact != "" || res.Steps == 0 || res.Scheduler.Workers != 3 || res.Scheduler.BatchSize != 16 {
			t.Fatalf("seed %d: exact %v (%q), %d steps, scheduler %+v", seed, res.Exact, res.Inexact, res.Steps, res.Scheduler)
		}
		if res.AccountsHash != hash || res.Slot != last {
			t.Fatalf("seed %d: the recording ended at slot %d with hash %x, the replay at slot %d with %x", seed, last, hash, res.Slot, res.AccountsHash)
		}
		if res.LiveBatches != 0 || res.Stats.Buffered != 0 {
			t.Fatalf("seed %d: %d batches live, %d buffered", seed, res.LiveBatches, res.Stats.Buffered)
		}
		if seed != 1 {
			continue
		}
		own, err := Replay(ReplayConfig{Dir: dir, OwnScheduler: true, Scheduler: scheduler.Config{Workers: 3, BatchSize: 16}})
		if err != nil {
			t.Fatal(err)
		}
		if own.Exact || !strings.Contains(own.Inexact, "its own scheduler") || own.Steps != res.Steps {
			t.Fatalf("seed %d: own scheduler: exact %v (%q), %d steps", seed, own.Exact, own.Inexact, own.Steps)
		}
	}
}

// TestReplayVersion: a trace of another format version is refused,
// saying which and what to do.
func TestReplayVersion(t *testing.T) {
	for _, c := range []struct {
		version byte
		want    string
	}{{2, "written by an older tpu"}, {Version + 1, "written by a newer tpu"}} {
		dir := t.TempDir()
		recordLoad(t, dir, 100, 64, 2)
		f := filepath.Join(dir, fileName(1))
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data[len(magic)] = c.version
		os.WriteFile(f, data, 0o644)
		_, err = Replay(ReplayConfig{Dir: dir})
		if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("version %d: %v", c.version, err)
		}
	}
}
