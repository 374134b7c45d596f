package ledger_test

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"
	"github.com/tpugo/tpu/banking/scheduler/schedtest"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/packet/packettest"
	"github.com/tpugo/tpu/txview"
)

func TestRestartResumes(t *testing.T) {
	for _, mode := range []ledger.SyncMode{ledger.SyncEachSlot, ledger.NoSync} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			cfg := bank.Config{Dir: dir, Sync: mode, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 16}}
			b := banktest.OpenBank(t, cfg)
			s := schedtest.New(t, scheduler.Config{Workers: 2}, b)
			pool, _ := packet.NewPool(packet.Config{})
			bh := b.LatestBlockhash()
			ok := banktest.TransferTx(t, bh, banktest.Key(0), txview.PublicKey(banktest.FreshKey(3)), 5_000_000)
			failed := banktest.TransferTx(t, bh, banktest.Key(1), banktest.Pub(2), 9_000_000_000_000)
			s.Submit(banktest.BatchOf(t, pool, ok, failed))
			schedtest.Drain(t, s)
			schedtest.EndSlot(t, s)
			want := map[banking.Pubkey]uint64{}
			for _, k := range []banking.Pubkey{banktest.Pub(0), banktest.Pub(1), banktest.Pub(2), txview.PublicKey(banktest.FreshKey(3))} {
				want[k] = lamports(b, k)
			}
			slot := b.Slot()
			s.Close()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}

			b2 := banktest.OpenBank(t, cfg)
			defer b2.Close()
			if b2.Slot() != slot {
				t.Fatalf("resumed at slot %d, want %d", b2.Slot(), slot)
			}
			for k, v := range want {
				if got := lamports(b2, k); got != v {
					t.Fatalf("balance %x: %d after restart, want %d", k[:4], got, v)
				}
			}
			for tx, want := range map[string]string{"ok": "ok", "failed": "InstructionError(0, Custom(1))"} {
				raw := ok
				if tx == "failed" {
					raw = failed
				}
				v, _ := txview.Parse(raw)
				st, found, err := b2.Ledger().StatusOf(v.Signature(0), 0)
				if err != nil || !found || st.Err.String() != want {
					t.Fatalf("%s: status %v %v %v", tx, st, found, err)
				}
				if cached, ok := b2.Status(bh, v.Signature(0)); !ok || cached != st {
					t.Fatalf("%s: not in the status cache after restart", tx)
				}
			}
			if b2.Capitalization() != bank.GenesisCapitalization(cfg.Genesis) {
				t.Fatal("capitalization changed across the restart")
			}
			// The same transaction again is already processed.
			s2 := schedtest.New(t, scheduler.Config{}, b2)
			s2.Submit(banktest.BatchOf(t, pool, ok))
			if got := s2.Stats().Outcomes[packet.OutcomeAlreadyProcessed]; got != 1 {
				t.Fatalf("replay after restart: outcomes %v", s2.Stats().Outcomes)
			}
			if b2.LatestBlockhash() == bh {
				t.Fatal("the committed slot's blockhash did not join the window")
			}
		})
	}
}

func TestSeedMismatch(t *testing.T) {
	dir := t.TempDir()
	b := banktest.OpenBank(t, bank.Config{Dir: dir})
	b.Close()
	_, err := bank.Open(bank.Config{Dir: dir, Genesis: bank.GenesisConfig{Seed: "other"}})
	if !errors.Is(err, bank.ErrConfig) {
		t.Fatalf("opened a ledger with another seed: %v", err)
	}
}

// The crash test: a child process runs the bank and prints each slot's
// signatures once the slot is committed, with the durable slot; the
// parent kills it with SIGKILL in the middle of a slot, reopens the
// ledger and checks that every durable slot it was told of is there, and
// no slot is half there.

const (
	crashChildEnv = "TPU_BANKING_CRASH_CHILD"
	crashSyncEnv  = "TPU_BANKING_CRASH_SYNC"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	os.Exit(packettest.Run(m)) // fails on a leaked batch (invariants build)
}

// crashChild executes transfers forever, one batch per slot, and reports
// committed slots on stdout: "committed <slot> <durable slot> <sig hex>...".
func crashChild(dir string) {
	fail := func(err error) { fmt.Fprintln(os.Stderr, "child:", err); os.Exit(2) }
	mode, err := ledger.ParseSyncMode(os.Getenv(crashSyncEnv))
	if err != nil {
		fail(err)
	}
	b, err := bank.Open(bank.Config{Dir: dir, Sync: mode, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 64}})
	if err != nil {
		fail(err)
	}
	s, err := scheduler.New(scheduler.Config{Workers: 2}, b)
	if err != nil {
		fail(err)
	}
	var mu sync.Mutex
	bySlot := map[uint64][]string{}
	out := bufio.NewWriter(os.Stdout)
	b.OnCommit(func(r ledger.SlotRecord) {
		mu.Lock()
		sigs := bySlot[r.Slot]
		delete(bySlot, r.Slot)
		mu.Unlock()
		fmt.Fprintf(out, "committed %d %d %s\n", r.Slot, b.DurableSlot(), strings.Join(sigs, " "))
		out.Flush()
	})
	pool, _ := packet.NewPool(packet.Config{})
	n := 0
	for {
		bh := b.LatestBlockhash()
		batch := pool.Get()
		var sigs []string
		for i := 0; i < 32; i++ {
			n++
			m := txview.Message{Payer: txview.PublicKey(bank.GenesisKey(banktest.Seed, n%64)), Blockhash: bh,
				Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(bank.GenesisKey(banktest.Seed, n%64)), txview.PublicKey(bank.GenesisKey(banktest.Seed, (n+7)%64)), uint64(n))}}
			tx, err := m.Sign(bank.GenesisKey(banktest.Seed, n%64))
			if err != nil {
				fail(err)
			}
			batch.Next().Fill(tx)
			v, _ := txview.Parse(tx)
			sigs = append(sigs, hex.EncodeToString(v.Signature(0)[:]))
		}
		slot := b.Slot()
		s.Submit(batch)
		for !s.Idle() {
			s.Schedule()
			if s.Busy() {
				s.Complete(<-s.Completions())
			}
		}
		mu.Lock()
		bySlot[slot] = sigs
		mu.Unlock()
		done, err := s.EndSlot()
		for !done && err == nil {
			s.Complete(<-s.Completions())
			done, err = s.TryEndSlot()
		}
		if err != nil {
			fail(err)
		}
	}
}

func TestCrashRecovery(t *testing.T) {
	for _, mode := range []ledger.SyncMode{ledger.SyncEachSlot, ledger.NoSync} {
		t.Run(mode.String(), func(t *testing.T) { testCrashRecovery(t, mode) })
	}
}

func testCrashRecovery(t *testing.T, mode ledger.SyncMode) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashSyncEnv+"="+mode.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reported := map[string]uint64{} // signature -> slot
	lastReported, lastDurable := uint64(0), uint64(0)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	deadline := time.After(60 * time.Second)
	lines := make(chan string)
	go func() {
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	parse := func(l string) bool {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] != "committed" {
			return false
		}
		slot, err1 := strconv.ParseUint(f[1], 10, 64)
		durable, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		for _, sig := range f[3:] {
			reported[sig] = slot
		}
		lastReported, lastDurable = slot, durable
		return true
	}
	// Let it make a few dozen slots durable (with NoSync, once a
	// second), then kill it at once: it is always in the middle of
	// executing or committing one.
	for lastDurable < 40 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("child exited early")
			}
			if !parse(l) {
				t.Fatalf("bad line %q", l)
			}
		case <-deadline:
			t.Fatal("child too slow")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for l := range lines { // lines printed before the kill still count
		parse(l)
	}
	cmd.Wait()
	if mode == ledger.SyncEachSlot && lastDurable != lastReported {
		t.Fatalf("sync: slot %d reported committed but only %d durable", lastReported, lastDurable)
	}

	b := banktest.OpenBank(t, bank.Config{Dir: dir, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 64}})
	defer b.Close()
	last := b.Slot() - 1
	if last < lastDurable {
		t.Fatalf("ledger ends at slot %d; slot %d was reported durable", last, lastDurable)
	}
	for sigHex, slot := range reported {
		if slot > last {
			continue // committed, not durable, lost by the crash (NoSync only: checked above)
		}
		raw, _ := hex.DecodeString(sigHex)
		st, ok, err := b.Ledger().StatusOf((*[64]byte)(raw), 0)
		if err != nil || !ok || st.Slot != slot || st.Err.IsErr() {
			t.Fatalf("reported transaction %s… (slot %d) after restart: %+v %v %v", sigHex[:8], slot, st, ok, err)
		}
		if r, ok, err := b.Ledger().Transaction((*[64]byte)(raw)); err != nil || !ok || r.Slot != slot {
			t.Fatalf("reported transaction %s… (slot %d) not in history after restart: %v %v", sigHex[:8], slot, ok, err)
		}
	}
	// No partial slot: every slot up to the last has its record and
	// exactly as many statuses as it says; nothing exists beyond it.
	counts := map[uint64]uint64{}
	err = b.Ledger().Scan([]byte{ledger.PrefixTxSlot}, func(k, _ []byte) error {
		slot := binary.BigEndian.Uint64(k[1:9])
		return b.Ledger().EachStatus(slot, func(*[64]byte, ledger.Status, banking.Pubkey) error {
			counts[slot]++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	// The same for the transaction history (history.go): a slot has all
	// of its history or none, and none beyond the last slot.
	history := map[uint64]uint64{}
	err = b.Ledger().Scan([]byte{ledger.PrefixHistory}, func(k, _ []byte) error {
		history[binary.BigEndian.Uint64(k[1:9])]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for s := uint64(1); s <= last; s++ {
		rec, ok, err := b.Ledger().SlotRecordOf(s)
		if err != nil || !ok {
			t.Fatalf("slot %d: no record (%v)", s, err)
		}
		if rec.Transactions != counts[s] {
			t.Fatalf("slot %d: record says %d transactions, ledger holds %d", s, rec.Transactions, counts[s])
		}
		if rec.Transactions != history[s] {
			t.Fatalf("slot %d: record says %d transactions, history holds %d", s, rec.Transactions, history[s])
		}
		delete(counts, s)
		delete(history, s)
	}
	if len(counts) != 0 {
		t.Fatalf("statuses beyond the last committed slot %d: %v", last, counts)
	}
	if len(history) != 0 {
		t.Fatalf("history beyond the last committed slot %d: %v", last, history)
	}
	if _, ok, _ := b.Ledger().SlotRecordOf(last + 1); ok {
		t.Fatalf("a record for slot %d, beyond the last committed", last+1)
	}
	if got, want := b.Capitalization(), bank.GenesisCapitalization(bank.GenesisConfig{Seed: banktest.Seed, Accounts: 64}); got != want {
		t.Fatalf("capitalization %d, want %d: lamports created or lost", got, want)
	}
	t.Logf("%s: killed after slot %d committed, %d durable; ledger resumed at slot %d", mode, lastReported, lastDurable, b.Slot())
	_ = filepath.Join
}

func lamports(b *bank.Bank, k banking.Pubkey) uint64 {
	a, _ := b.Account(k)
	return a.Lamports
}
