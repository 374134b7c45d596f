package banking

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The ledger is a Pebble database. Keys:
//
//	"a" + pubkey              account (account.go encoding)
//	"h" + slot (8, big-endian) slot record: blockhash (32), transactions (8), fees burned (8), leader reward (8)
//	"t" + slot (8, big-endian) where the slot's status value lies in the status log
//	                          (statuslog.go): offset (8), length (8), CRC-32C (4)
//	"l"                       the status log's committed length (8)
//	"m"                       meta: last committed slot (8), lamports burned (8), genesis seed
//	"v"                       ledger format (1 byte, ledgerFormat)
//
// A slot's status value is signature (64) + status (status.go encoding,
// 48) for each transaction it executed: one value per slot, not one key
// per transaction, so a slot of 100,000 transactions is one 11 MB append
// instead of 100,000 keys to sort, which matters on a machine whose cores
// also run the pipeline. Finding an old signature therefore reads slots
// backwards (Bank.StatusOf); recent ones are in the in-memory status
// cache.
//
// Each slot's changes are one Pebble batch, so a slot is either wholly on
// disk or not at all; the meta record in the batch names the last slot
// committed, and the "l" record how much of the status log is.
const (
	prefixAccount = 'a'
	prefixSlot    = 'h'
	prefixTxSlot  = 't'
	keyMeta       = "m"
)

// SyncMode says whether each slot's commit waits for the disk.
type SyncMode uint8

const (
	// SyncEachSlot fsyncs every slot's batch before the slot counts as
	// committed (the default).
	SyncEachSlot SyncMode = iota
	// NoSync leaves flushing to the operating system: a process crash
	// loses nothing; a machine crash may lose the last slots, or leave
	// the status log behind what the ledger records, which Open then
	// refuses (ErrStore) rather than resume with statuses missing.
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
	Blockhash    Hash
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
	db  *pebble.DB
	log vfs.File // the status log (statuslog.go)
	// logWritten is how far the log has been written: where the next
	// slot's statuses go (it starts at the committed length, and a slot
	// whose batch fails stops the store), and what bounds the locations
	// readers are handed. Written by the committer alone.
	logWritten atomic.Uint64
	sync       SyncMode
	queue      chan *slotCommit
	done       chan struct{}
	committed  atomic.Uint64 // last slot durable on disk
	// visible is the last slot whose writes readers of the ledger may
	// see: the committed slot, or the one being written after it.
	visible   atomic.Uint64
	mu        sync.Mutex
	err       error // first commit failure; the bank stops committing
	listeners []func(SlotRecord)
	spare     chan *pebble.Batch // committed batches, reset, for reuse
	buffers   chan []byte        // slotCommit buffers back from the committer
}

// slotCommit is one slot's changes on their way to disk. The bank fills it
// at the slot's end (the accounts are encoded then, so that later slots
// may change them); the committer turns it into one Pebble batch, so that
// the scheduler does not wait for that copy either.
type slotCommit struct {
	record   SlotRecord
	accounts []byte // per account: key (32), present (1), length (4, little-endian), encoding
	statuses []byte // the slot's status value
	meta     []byte
}

// appendAccount adds an account (or its deletion) to c.accounts.
func (c *slotCommit) appendAccount(a *Account) {
	c.accounts = append(c.accounts, a.key[:]...)
	if !a.Exists() {
		c.accounts = append(c.accounts, 0)
		return
	}
	c.accounts = append(c.accounts, 1, 0, 0, 0, 0)
	at := len(c.accounts)
	c.accounts = a.appendEncoding(c.accounts)
	binary.LittleEndian.PutUint32(c.accounts[at-4:], uint32(len(c.accounts)-at))
}

// buffer returns a buffer the committer gave back, or a new one.
func (s *store) buffer(size int) []byte {
	select {
	case b := <-s.buffers:
		if cap(b) >= size {
			return b[:0]
		}
	default:
	}
	return make([]byte, 0, size)
}

// build turns c into a Pebble batch.
func (s *store) build(c *slotCommit) (*pebble.Batch, error) {
	batch := s.newBatch(len(c.accounts) + 512)
	key := make([]byte, 33)
	key[0] = prefixAccount
	for p := c.accounts; len(p) > 0; {
		if len(p) < 33 {
			batch.Close()
			return nil, fmt.Errorf("%w: malformed slot commit", ErrStore)
		}
		copy(key[1:], p[:32])
		if p[32] == 0 {
			batch.Delete(key, nil)
			p = p[33:]
			continue
		}
		n := int(binary.LittleEndian.Uint32(p[33:]))
		batch.Set(key, p[37:37+n], nil)
		p = p[37+n:]
	}
	if len(c.statuses) > 0 {
		loc, err := s.appendStatuses(c.statuses)
		if err != nil {
			batch.Close()
			return nil, err
		}
		batch.Set(binary.BigEndian.AppendUint64([]byte{prefixTxSlot}, c.record.Slot), loc.encode(), nil)
		batch.Set([]byte(keyLogEnd), binary.LittleEndian.AppendUint64(nil, loc.off+loc.n), nil)
	}
	batch.Set(slotKey(c.record.Slot), c.record.encode(), nil)
	batch.Set([]byte(keyMeta), c.meta, nil)
	return batch, nil
}

// ErrStore wraps a failure of the ledger database.
var ErrStore = errors.New("banking: ledger")

func openStore(dir string, mode SyncMode, inMemory bool) (*store, error) {
	opts := &pebble.Options{
		Logger: quietLogger{},
		// Signatures and keys are random bytes: compression costs CPU and
		// saves nothing.
		FormatMajorVersion: pebble.FormatValueSeparation,
		MemTableSize:       64 << 20,
	}
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings {
		return pebble.UniformDBCompressionSettings(sstable.NoCompression)
	})
	// An account with large data is a large value: written once to a
	// blob file, it is not rewritten by every compaction that moves its
	// key.
	opts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: 4096, MaxBlobReferenceDepth: 10, RewriteMinimumAge: time.Hour, TargetGarbageRatio: 1}
	}
	opts.FS = vfs.Default
	if inMemory {
		opts.FS = vfs.NewMem()
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrStore, dir, err)
	}
	s := &store{db: db, sync: mode, queue: make(chan *slotCommit, 64), done: make(chan struct{}),
		spare: make(chan *pebble.Batch, 2), buffers: make(chan []byte, 4)}
	if err = s.checkFormat(dir); err == nil {
		var end uint64
		if end, err = s.readLogEnd(); err == nil {
			s.log, err = openStatusLog(opts.FS, dir, end)
			s.logWritten.Store(end)
		}
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	go s.run()
	return s, nil
}

// checkFormat refuses a ledger of another format, and marks a new one
// with this format.
func (s *store) checkFormat(dir string) error {
	v, err := s.get([]byte(keyFormat))
	if err != nil {
		return err
	}
	if v != nil {
		if len(v) != 1 || v[0] != ledgerFormat {
			return fmt.Errorf("%w: %q has ledger format %v; this tpu reads format %d: start afresh with tpu run --reset", ErrStore, dir, v, ledgerFormat)
		}
		return nil
	}
	if m, err := s.get([]byte(keyMeta)); err != nil || m != nil {
		if err == nil {
			err = fmt.Errorf("%w: %q was written by an older tpu (ledger format 1); this tpu reads format %d: start afresh with tpu run --reset", ErrStore, dir, ledgerFormat)
		}
		return err
	}
	if err := s.db.Set([]byte(keyFormat), []byte{ledgerFormat}, pebble.Sync); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}

// readLogEnd reads the status log's committed length.
func (s *store) readLogEnd() (uint64, error) {
	v, err := s.get([]byte(keyLogEnd))
	if err != nil || v == nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: malformed status log length", ErrStore)
	}
	return binary.LittleEndian.Uint64(v), nil
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
		if s.failure() != nil {
			// A slot failed: the slots queued behind it must not land
			// either, or the ledger would have a gap.
			continue
		}
		batch, err := s.build(c)
		if err == nil {
			s.visible.Store(c.record.Slot)
			err = batch.Commit(s.writeOpts())
			if err != nil {
				s.visible.Store(s.committed.Load()) // it did not land
			}
			// Keep the batch's buffer for a later slot: a slot's batch
			// of accounts runs to hundreds of kilobytes, and a fresh one
			// each slot is garbage to collect.
			batch.Reset()
			select {
			case s.spare <- batch:
			default:
				batch.Close()
			}
		}
		for _, b := range [][]byte{c.accounts, c.statuses} {
			select {
			case s.buffers <- b:
			default:
			}
		}
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

// maxRetainedBatch is the largest batch buffer kept for reuse (a slot of
// 200,000 transactions is about 25 MB).
const maxRetainedBatch = 64 << 20

// newBatch returns an empty batch, reusing a committed one if there is
// one.
func (s *store) newBatch(size int) *pebble.Batch {
	select {
	case b := <-s.spare:
		return b
	default:
		return s.db.NewBatch(pebble.WithInitialSizeBytes(size), pebble.WithMaxRetainedSizeBytes(maxRetainedBatch))
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
	close(s.spare)
	for b := range s.spare {
		b.Close()
	}
	close(s.buffers)
	err := s.failure()
	if cerr := s.db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%w: close: %w", ErrStore, cerr)
	}
	if cerr := s.log.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%w: close the status log: %w", ErrStore, cerr)
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
