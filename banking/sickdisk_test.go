package banking

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// sickDisk fails every write (not the lock, closing a file or making a
// directory that exists) with err
// while it is on: a full disk (ENOSPC) or a read-only one (EROFS).
type sickDisk struct {
	on  atomic.Bool
	err error
	sst bool // only the creation of sst files fails (a flush, and nothing else)
}

func (d *sickDisk) MaybeError(op errorfs.Op) error {
	if !d.on.Load() || op.Kind.ReadOrWrite() != errorfs.OpIsWrite || op.Kind == errorfs.OpLock || op.Kind == errorfs.OpFileClose || op.Kind == errorfs.OpMkdirAll {
		return nil
	}
	if d.sst && (op.Kind != errorfs.OpCreate || !strings.HasSuffix(op.Path, ".sst")) {
		return nil
	}
	return d.err
}

func (d *sickDisk) String() string { return "sick disk" }

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
			disk := &sickDisk{err: d.err}
			var logs syncBuffer
			cfg := Config{Dir: t.TempDir(), Genesis: GenesisConfig{Seed: testSeed, Accounts: 8},
				fs: errorfs.Wrap(vfs.Default, disk), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			b := openBank(t, cfg)
			s := newScheduler(t, SchedulerConfig{Workers: 2}, b)
			pool, _ := packet.NewPool(packet.Config{})
			run := func(i int) {
				s.Submit(batchOf(t, pool, transferTx(t, b.LatestBlockhash(), gkey(i), txview.PublicKey(freshKey(i)), 1_000_000)))
				drain(t, s)
				s.EndSlot()
			}
			committed := make(chan uint64, 8)
			b.OnCommit(func(r SlotRecord) { committed <- r.Slot })
			run(0)
			if slot := <-committed; slot != 1 { // on a healthy disk
				t.Fatalf("committed slot %d first", slot)
			}
			if b.Err() != nil {
				t.Fatal(b.Err())
			}
			disk.on.Store(true)
			run(1)
			s.Close()
			b.Close() // waits for the queued slot
			err := b.Err()
			if !errors.Is(err, ErrStore) || !errors.Is(err, d.err) {
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
				cfg := Config{Dir: t.TempDir(), Genesis: GenesisConfig{Seed: testSeed, Accounts: 8}}
				if existing {
					runSlots(t, cfg, 0, 1, 2)
				}
				if d.sst && !existing {
					return // a new ledger has nothing to flush
				}
				disk := &sickDisk{err: d.err, sst: d.sst}
				disk.on.Store(true)
				cfg.fs = errorfs.Wrap(vfs.Default, disk)
				done := make(chan error, 1)
				go func() {
					b, err := Open(cfg)
					if err == nil {
						b.Close()
					}
					done <- err
				}()
				select {
				case err := <-done:
					if !errors.Is(err, ErrStore) || !errors.Is(err, d.err) {
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
