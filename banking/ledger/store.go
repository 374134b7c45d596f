package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tpugo/tpu/banking"
)

// The ledger is a Pebble database. Keys:
//
//	"a" + pubkey              account (account.go encoding)
//	"h" + slot (8, big-endian) slot record: blockhash (32), transactions (8), fees burned (8), leader reward (8), incinerated (8; absent before it was recorded)
//	"h" + slot (8, big-endian) slot record: blockhash (32), transactions (8), fees burned (8), leader reward (8)
//	"x", "s", "i", "T"        transaction history (history.go)
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
	// keyBlockhashSeed holds the genesis BlockhashSeed (Bank.Genesis).
	keyBlockhashSeed = "g"
)

// SyncMode says whether each slot's commit waits for the disk.
//
// A slot is committed when its batch is in Pebble (readers see it; RPC
// reports it "confirmed") and durable when it has been fsynced (RPC
// reports it "finalized"; Bank.DurableSlot).
type SyncMode uint8

const (
	// SyncEachSlot fsyncs every slot's status record and batch before
	// the slot counts as committed (the default): committed and durable
	// are the same slot, and neither a process crash nor a machine
	// crash loses a committed slot.
	SyncEachSlot SyncMode = iota
	// NoSync commits each slot without waiting for the disk, and makes
	// the slots committed so far durable (one fsync of the status log
	// and one of Pebble's WAL) once every NoSyncInterval.
	//
	// A process crash (SIGKILL) may lose the committed slots after the
	// last durable one: Pebble keeps an unsynced commit in its own WAL
	// buffer, not the OS's, until a 32 KB block fills or a sync asks
	// for it. A machine crash may lose the same, or leave the status log
	// behind what Pebble records, which Open then refuses (ErrStore)
	// rather than resume with statuses missing. Neither loses a durable
	// slot, so neither loses a transaction RPC reported "finalized".
	NoSync
)

// NoSyncInterval is how often NoSync makes the committed slots durable.
const NoSyncInterval = time.Second

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
	Blockhash    banking.Hash
	Transactions uint64 // executed (ok or failed) in the slot
	FeesBurned   uint64
	Reward       uint64 // credited to the collector
	// Incinerated is what the incinerator held at the slot's end,
	// burned (incinerator.go).
	Incinerated uint64
	// CollectorBalance is the collector's lamports after Reward was
	// credited (getBlock's reward postBalance); 0 when Reward is, and in
	// a record written before the field existed.
	CollectorBalance uint64
}

func slotKey(slot uint64) []byte { return binary.BigEndian.AppendUint64([]byte{prefixSlot}, slot) }

func (r SlotRecord) encode() []byte {
	b := append([]byte(nil), r.Blockhash[:]...)
	b = binary.LittleEndian.AppendUint64(b, r.Transactions)
	b = binary.LittleEndian.AppendUint64(b, r.FeesBurned)
	b = binary.LittleEndian.AppendUint64(b, r.Reward)
	b = binary.LittleEndian.AppendUint64(b, r.Incinerated)
	return binary.LittleEndian.AppendUint64(b, r.CollectorBalance)
}

func decodeSlotRecord(slot uint64, b []byte) (SlotRecord, error) {
	// A ledger from before Incinerated has 32+24, from before
	// CollectorBalance 32+32.
	if len(b) != 32+24 && len(b) != 32+32 && len(b) != 32+40 {
		return SlotRecord{}, fmt.Errorf("banking: slot %d: malformed record", slot)
	}
	r := SlotRecord{Slot: slot}
	copy(r.Blockhash[:], b)
	r.Transactions = binary.LittleEndian.Uint64(b[32:])
	r.FeesBurned = binary.LittleEndian.Uint64(b[40:])
	r.Reward = binary.LittleEndian.Uint64(b[48:])
	if len(b) >= 32+32 {
		r.Incinerated = binary.LittleEndian.Uint64(b[56:])
	}
	if len(b) == 32+40 {
		r.CollectorBalance = binary.LittleEndian.Uint64(b[64:])
	}
	return r, nil
}

// store owns the Pebble database and a goroutine that commits slot
// batches in order, so that the scheduler never waits for the disk.
type Store struct {
	db  *pebble.DB
	log vfs.File // the status log (statuslog.go)
	// logWritten is how far the log has been written: where the next
	// slot's statuses go (it starts at the committed length, and a slot
	// whose batch fails stops the store), and what bounds the locations
	// readers are handed. Written by the committer alone.
	logWritten atomic.Uint64
	sync       SyncMode
	queue      chan *SlotCommit
	done       chan struct{}
	committed  atomic.Uint64 // last slot whose batch is in Pebble
	durable    atomic.Uint64 // last slot fsynced (== committed with SyncEachSlot)
	lastSync   time.Time     // when the committer last made a slot durable
	dir        string
	logger     *slog.Logger
	lock       *pebble.Lock // the directory lock, held from before Open until close
	// visible is the last slot whose writes readers of the ledger may
	// see: the committed slot, or the one being written after it.
	visible   atomic.Uint64
	opening   chan struct{} // closed once Pebble's Open has returned
	failed    chan struct{} // closed with the first failure
	mu        sync.Mutex
	err       error // first failure (a commit, or Pebble's background work); the bank stops committing
	listeners []func(SlotRecord)
	spare     chan *pebble.Batch // committed batches, reset, for reuse
	buffers   chan []byte        // slotCommit buffers back from the committer

	// changeListeners see each committed slot's changes (changes.go).
	changeListeners []func(*SlotChanges)
	// metricsMu keeps Pebble open while memory reads its metrics; shut
	// says it is closing.
	metricsMu sync.Mutex
	shut      bool

	noHistory bool // Config.NoHistory
}

// ErrStore wraps a failure of the ledger database.
var ErrStore = errors.New("banking: ledger")

// ErrRolledBack reports a ledger whose database is behind what the status
// log proves was committed and made durable: resuming would silently
// undo slots that were reported finalized.
var ErrRolledBack = errors.New("banking: ledger rolled back")

// Err returns the ledger's first failure, or nil while it is healthy. It
// is safe for concurrent use.
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// OnCommit registers f to be called, on the committer goroutine, after
// each slot is committed.
func (s *Store) OnCommit(f func(SlotRecord)) {
	s.mu.Lock()
	s.listeners = append(s.listeners, f)
	s.mu.Unlock()
}

// Close waits for queued commits, makes them durable and closes the
// database.
func (s *Store) Close() error {
	close(s.queue)
	<-s.done
	close(s.spare)
	for b := range s.spare {
		b.Close()
	}
	close(s.buffers)
	err := s.Err()
	if err == nil && s.durable.Load() != s.committed.Load() {
		// A clean stop leaves every committed slot durable.
		err = s.db.LogData(nil, pebble.Sync)
		if err == nil {
			err = s.Err()
		}
		if err == nil {
			s.durable.Store(s.committed.Load())
			err = s.writeMark(s.committed.Load())
		}
	}
	if err == nil {
		err = s.log.SyncData() // and the last mark with it
	}
	if err != nil && !errors.Is(err, ErrStore) {
		err = fmt.Errorf("%w: sync at close: %w", ErrStore, err)
	}
	s.metricsMu.Lock()
	s.shut = true
	s.metricsMu.Unlock()
	if cerr := s.db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%w: close: %w", ErrStore, cerr)
	}
	if cerr := s.log.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%w: close the status log: %w", ErrStore, cerr)
	}
	if cerr := s.lock.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%w: unlock: %w", ErrStore, cerr)
	}
	return err
}
