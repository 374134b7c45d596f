package banking

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The ledger is a Pebble database. Keys:
//
//	"a" + pubkey              account (account.go encoding)
//	"h" + slot (8, big-endian) slot record: blockhash (32), transactions (8), fees burned (8), leader reward (8)
//	"t" + slot + signature    transaction status (status.go encoding)
//	"s" + signature           the slot of the signature's status (8)
//	"m"                       meta: last committed slot (8), lamports burned (8), genesis seed
//
// Each slot's changes are one Pebble batch, so a slot is either wholly on
// disk or not at all; the meta record in the batch names the last slot
// committed.
const (
	prefixAccount = 'a'
	prefixSlot    = 'h'
	prefixTxSlot  = 't'
	prefixSig     = 's'
	keyMeta       = "m"
)

// SyncMode says whether each slot's commit waits for the disk.
type SyncMode uint8

const (
	// SyncEachSlot fsyncs every slot's batch before the slot counts as
	// committed (the default).
	SyncEachSlot SyncMode = iota
	// NoSync leaves flushing to the operating system: a machine crash may
	// lose the last slots, a process crash loses nothing.
	NoSync
)

// ParseSyncMode reads "sync" or "nosync".
func ParseSyncMode(s string) (SyncMode, error) {
	switch s {
	case "sync", "":
		return SyncEachSlot, nil
	case "nosync":
		return NoSync, nil
	}
	return 0, fmt.Errorf("banking: unknown sync mode %q (sync, nosync)", s)
}

func (m SyncMode) String() string {
	if m == NoSync {
		return "nosync"
	}
	return "sync"
}

// SlotRecord describes a committed slot.
type SlotRecord struct {
	Slot         uint64
	Blockhash    Pubkey
	Transactions uint64 // executed (ok or failed) in the slot
	FeesBurned   uint64
	Reward       uint64 // credited to the collector
}

func slotKey(slot uint64) []byte { return binary.BigEndian.AppendUint64([]byte{prefixSlot}, slot) }

func (r SlotRecord) encode() []byte {
	b := append([]byte(nil), r.Blockhash[:]...)
	b = binary.LittleEndian.AppendUint64(b, r.Transactions)
	b = binary.LittleEndian.AppendUint64(b, r.FeesBurned)
	return binary.LittleEndian.AppendUint64(b, r.Reward)
}

func decodeSlotRecord(slot uint64, b []byte) (SlotRecord, error) {
	if len(b) != 32+24 {
		return SlotRecord{}, fmt.Errorf("banking: slot %d: malformed record", slot)
	}
	r := SlotRecord{Slot: slot}
	copy(r.Blockhash[:], b)
	r.Transactions = binary.LittleEndian.Uint64(b[32:])
	r.FeesBurned = binary.LittleEndian.Uint64(b[40:])
	r.Reward = binary.LittleEndian.Uint64(b[48:])
	return r, nil
}

// store owns the Pebble database and a goroutine that commits slot
// batches in order, so that the scheduler never waits for the disk.
type store struct {
	db        *pebble.DB
	sync      SyncMode
	queue     chan *slotCommit
	done      chan struct{}
	committed atomic.Uint64 // last slot durable on disk
	mu        sync.Mutex
	err       error // first commit failure; the bank stops committing
	listeners []func(SlotRecord)
}

// slotCommit is one slot's batch on its way to disk.
type slotCommit struct {
	record SlotRecord
	batch  *pebble.Batch
}

// ErrStore wraps a failure of the ledger database.
var ErrStore = errors.New("banking: ledger")

func openStore(dir string, mode SyncMode, inMemory bool) (*store, error) {
	opts := &pebble.Options{Logger: quietLogger{}}
	if inMemory {
		opts.FS = vfs.NewMem()
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrStore, dir, err)
	}
	s := &store{db: db, sync: mode, queue: make(chan *slotCommit, 64), done: make(chan struct{})}
	go s.run()
	return s, nil
}

// quietLogger keeps Pebble's informational logging off the console.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

func (s *store) writeOpts() *pebble.WriteOptions {
	if s.sync == NoSync {
		return pebble.NoSync
	}
	return pebble.Sync
}

func (s *store) run() {
	defer close(s.done)
	for c := range s.queue {
		err := c.batch.Commit(s.writeOpts())
		c.batch.Close()
		s.mu.Lock()
		if err != nil && s.err == nil {
			s.err = fmt.Errorf("%w: commit slot %d: %w", ErrStore, c.record.Slot, err)
		}
		failed := s.err != nil
		listeners := s.listeners
		s.mu.Unlock()
		if failed {
			continue // nothing after a failed slot may count as committed
		}
		s.committed.Store(c.record.Slot)
		for _, l := range listeners {
			l(c.record)
		}
	}
}

// enqueue hands a slot batch to the committer.
func (s *store) enqueue(c *slotCommit) { s.queue <- c }

func (s *store) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *store) onCommit(f func(SlotRecord)) {
	s.mu.Lock()
	s.listeners = append(s.listeners, f)
	s.mu.Unlock()
}

// close waits for queued commits and closes the database.
func (s *store) close() error {
	close(s.queue)
	<-s.done
	err := s.failure()
	if cerr := s.db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%w: close: %w", ErrStore, cerr)
	}
	return err
}

// readMeta reads the meta record: last committed slot (8), lamports
// burned since genesis (8), genesis seed (the rest).
func (s *store) readMeta() (slot, burned uint64, seed string, ok bool, err error) {
	v, closer, err := s.db.Get([]byte(keyMeta))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, 0, "", false, nil
	}
	if err != nil {
		return 0, 0, "", false, fmt.Errorf("%w: read meta: %w", ErrStore, err)
	}
	defer closer.Close()
	if len(v) < 16 {
		return 0, 0, "", false, fmt.Errorf("%w: malformed meta record", ErrStore)
	}
	return binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:]), string(v[16:]), true, nil
}

// scan calls f for every key under prefix, in order.
func (s *store) scan(prefix []byte, f func(k, v []byte) error) error {
	return s.scanRange(prefix, upperBound(prefix), f)
}

// scanRange calls f for every key in [lower, upper), in order.
func (s *store) scanRange(lower, upper []byte, f func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	for it.First(); it.Valid(); it.Next() {
		if err := f(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}

// upperBound returns the least key greater than every key with prefix p.
func upperBound(p []byte) []byte {
	u := bytes.Clone(p)
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] != 0xff {
			u[i]++
			return u[:i+1]
		}
	}
	return nil // every key
}

// get returns a copy of the value at key, or nil.
func (s *store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}
