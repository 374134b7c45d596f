package ledger_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"
	"github.com/tpugo/tpu/banking/scheduler/schedtest"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// syncBuffer is a log destination safe for the committer's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

var sickDisks = []struct {
	name string
	err  error
	sst  bool
}{{"full", syscall.ENOSPC, false}, {"read-only", syscall.EROFS, false}, {"full-at-flush", syscall.ENOSPC, true}}

// A disk that fails while the bank runs: the failure is logged when it
// happens, Err reports it, and no slot after it counts as committed.
func TestSickDiskWhileRunning(t *testing.T) {
	for _, d := range sickDisks {
		if d.sst {
			continue // a few slots fill no memtable: nothing flushes
		}
		t.Run(d.name, func(t *testing.T) {
			disk := &banktest.SickDisk{Err: d.err}
			var logs syncBuffer
			cfg := bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8},
				FS: errorfs.Wrap(vfs.Default, disk), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			b := banktest.OpenBank(t, cfg)
			s := schedtest.New(t, scheduler.Config{Workers: 2}, b)
			pool, _ := packet.NewPool(packet.Config{})
			run := func(i int) {
				s.Submit(banktest.BatchOf(t, pool, banktest.TransferTx(t, b.LatestBlockhash(), banktest.Key(i), txview.PublicKey(banktest.FreshKey(i)), 1_000_000)))
				schedtest.Drain(t, s)
				s.EndSlot()
			}
			committed := make(chan uint64, 8)
			b.OnCommit(func(r ledger.SlotRecord) { committed <- r.Slot })
			run(0)
			if slot := <-committed; slot != 1 { // on a healthy disk
				t.Fatalf("committed slot %d first", slot)
			}
			if b.Err() != nil {
				t.Fatal(b.Err())
			}
			disk.On.Store(true)
			run(1)
			s.Close()
			b.Close() // waits for the queued slot
			err := b.Err()
			if !errors.Is(err, ledger.ErrStore) || !errors.Is(err, d.err) {
				t.Fatalf("Err after the disk failed: %v", err)
			}
			if !strings.Contains(logs.String(), "ledger failed") || !strings.Contains(logs.String(), d.err.Error()) {
				t.Fatalf("the failure was not logged:\n%s", logs.String())
			}
			select {
			case slot := <-committed:
				t.Fatalf("slot %d counted as committed on a failed disk", slot)
			default:
			}
		})
	}
}

// Opening a ledger on a disk that fails every write returns an error
// promptly: Pebble retried its flush of the replayed WAL forever.
func TestSickDiskAtOpen(t *testing.T) {
	for _, d := range sickDisks {
		for _, existing := range []bool{false, true} {
			name := d.name + "/new"
			if existing {
				name = d.name + "/existing"
			}
			t.Run(name, func(t *testing.T) {
				cfg := bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 8}}
				if existing {
					runSlots(t, cfg, 0, 1, 2)
				}
				if d.sst && !existing {
					return // a new ledger has nothing to flush
				}
				disk := &banktest.SickDisk{Err: d.err, SST: d.sst}
				disk.On.Store(true)
				cfg.FS = errorfs.Wrap(vfs.Default, disk)
				done := make(chan error, 1)
				go func() {
					b, err := bank.Open(cfg)
					if err == nil {
						b.Close()
					}
					done <- err
				}()
				select {
				case err := <-done:
					if !errors.Is(err, ledger.ErrStore) || !errors.Is(err, d.err) {
						t.Fatalf("open on a %s disk: %v", d.name, err)
					}
					t.Log(err)
				case <-time.After(30 * time.Second):
					t.Fatalf("open on a %s disk still running after 30 s", d.name)
				}
			})
		}
	}
}
