package ledger_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"
	"github.com/tpugo/tpu/banking/scheduler/schedtest"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// runSlots opens the ledger, executes one transfer from genesis account
// i in a slot of its own for each i, closes the ledger and returns the
// signatures.
func runSlots(t *testing.T, cfg bank.Config, from ...int) [][64]byte {
	t.Helper()
	b := banktest.OpenBank(t, cfg)
	s := schedtest.New(t, scheduler.Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	var sigs [][64]byte
	for _, i := range from {
		tx := banktest.TransferTx(t, b.LatestBlockhash(), banktest.Key(i), txview.PublicKey(banktest.FreshKey(i)), 1_000_000)
		s.Submit(banktest.BatchOf(t, pool, tx))
		schedtest.Drain(t, s)
		schedtest.EndSlot(t, s)
		sig, _ := txview.FirstSignature(tx)
		sigs = append(sigs, *sig)
	}
	s.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return sigs
}

func statusLogPath(dir string) string { return filepath.Join(dir, ledger.StatusLogName) }

// A slot whose statuses reached the log but whose batch never committed
// (a crash between the two) leaves bytes past the committed end: the
// ledger opens, the next slot writes over them, and every committed
// status reads back.
func TestStatusLogTornTail(t *testing.T) {
	cfg := bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8}}
	sigs := runSlots(t, cfg, 0, 1)
	fi, err := os.Stat(statusLogPath(cfg.Dir))
	if err != nil {
		t.Fatal(err)
	}
	end := fi.Size() - ledger.RecordHeader // the last slot's durable mark lies past the end
	f, err := os.OpenFile(statusLogPath(cfg.Dir), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte{0xab}, 1000))
	f.Close()
	sigs = append(sigs, runSlots(t, cfg, 2, 3)...)
	b := banktest.OpenBank(t, cfg)
	defer b.Close()
	// The two new slots (one transaction each) went over the tail.
	if got, want := b.Ledger().LogWritten(), uint64(end)+2*(ledger.RecordHeader+64+ledger.StatusRecordLen); got != want {
		t.Fatalf("status log end %d after the torn tail, want %d", got, want)
	}
	for i, sig := range sigs {
		if st, found, err := b.Ledger().StatusOf(&sig, 0); err != nil || !found || st.Err.IsErr() {
			t.Fatalf("transaction %d after the torn tail: %+v %v %v", i, st, found, err)
		}
	}
}

// A log shorter than the ledger says (statuses lost while their slots'
// batches survived) is refused at open, naming the log.
func TestStatusLogShort(t *testing.T) {
	cfg := bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8}}
	runSlots(t, cfg, 0)
	fi, err := os.Stat(statusLogPath(cfg.Dir))
	if err != nil || fi.Size() == 0 {
		t.Fatalf("status log %v %v", fi, err)
	}
	if err := os.Truncate(statusLogPath(cfg.Dir), fi.Size()-ledger.RecordHeader-1); err != nil { // into the last slot's record
		t.Fatal(err)
	}
	_, err = bank.Open(cfg)
	if !errors.Is(err, ledger.ErrStore) || !strings.Contains(err.Error(), ledger.StatusLogName) {
		t.Fatalf("opened a ledger whose status log is short: %v", err)
	}
}

// A changed byte in a committed slot's statuses fails its checksum: the
// ledger, which reads the window's statuses at open, refuses to open.
func TestStatusLogChecksum(t *testing.T) {
	cfg := bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8}}
	runSlots(t, cfg, 0)
	// Flipped, not overwritten: the signature signs a random genesis
	// blockhash, so any fixed byte is already there one run in 256.
	flipByte(t, statusLogPath(cfg.Dir), ledger.RecordHeader+10) // inside the signature
	_, err := bank.Open(cfg)
	if !errors.Is(err, ledger.ErrStore) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("opened a ledger with a corrupt status log: %v", err)
	}
}

// A ledger of the format before the status log (no format record) is
// refused with a way out, not misread.
func TestLedgerFormat1Refused(t *testing.T) {
	cfg := bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8}}
	runSlots(t, cfg)
	st, err := ledger.Open(ledger.Config{Dir: cfg.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DB().Delete([]byte(ledger.KeyFormat), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = bank.Open(cfg)
	if !errors.Is(err, ledger.ErrStore) || !strings.Contains(err.Error(), "no format record") || strings.Contains(err.Error(), "--reset") {
		t.Fatalf("opened a format-1 ledger: %v", err)
	}
}

// A slot that fails to commit stops the slots queued behind it: none may
// land past the gap (the failure is the status log's write, after its
// file is closed under the committer).
func TestFailedSlotStopsTheQueue(t *testing.T) {
	dir := t.TempDir()
	st, err := ledger.Open(ledger.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	st.CloseLog()
	st.Enqueue(&ledger.SlotCommit{Record: ledger.SlotRecord{Slot: 1}, Statuses: make([]byte, 112), Meta: make([]byte, 16)})
	st.Enqueue(&ledger.SlotCommit{Record: ledger.SlotRecord{Slot: 2}, Meta: make([]byte, 16)}) // no statuses: Pebble alone
	if err := st.Close(); !errors.Is(err, ledger.ErrStore) {
		t.Fatalf("close after a failed slot: %v", err)
	}
	st, err = ledger.Open(ledger.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, slot := range []uint64{1, 2} {
		if v, err := st.Get(ledger.SlotKey(slot)); err != nil || v != nil {
			t.Fatalf("slot %d landed after slot 1 failed: %x %v", slot, v, err)
		}
	}
}

// A damaged location (a length past what the log holds) is an ErrStore,
// not an allocation of that size.
func TestStatusLogDamagedLocation(t *testing.T) {
	cfg := bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8}}
	runSlots(t, cfg, 0)
	st, err := ledger.Open(ledger.Config{Dir: cfg.Dir})
	if err != nil {
		t.Fatal(err)
	}
	key := binary.BigEndian.AppendUint64([]byte{ledger.PrefixTxSlot}, 1)
	if err := st.DB().Set(key, ledger.StatusLoc{Off: 0, N: 1 << 50}.Encode(), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = bank.Open(cfg)
	if !errors.Is(err, ledger.ErrStore) || !strings.Contains(err.Error(), "past the") {
		t.Fatalf("opened a ledger with a damaged status location: %v", err)
	}
}
