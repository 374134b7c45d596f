package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
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
}

func slotKey(slot uint64) []byte { return binary.BigEndian.AppendUint64([]byte{prefixSlot}, slot) }

func (r SlotRecord) encode() []byte {
	b := append([]byte(nil), r.Blockhash[:]...)
	b = binary.LittleEndian.AppendUint64(b, r.Transactions)
	b = binary.LittleEndian.AppendUint64(b, r.FeesBurned)
	b = binary.LittleEndian.AppendUint64(b, r.Reward)
	return binary.LittleEndian.AppendUint64(b, r.Incinerated)
}

func decodeSlotRecord(slot uint64, b []byte) (SlotRecord, error) {
	if len(b) != 32+24 && len(b) != 32+32 { // a ledger from before Incinerated has 32+24
		return SlotRecord{}, fmt.Errorf("banking: slot %d: malformed record", slot)
	}
	r := SlotRecord{Slot: slot}
	copy(r.Blockhash[:], b)
	r.Transactions = binary.LittleEndian.Uint64(b[32:])
	r.FeesBurned = binary.LittleEndian.Uint64(b[40:])
	r.Reward = binary.LittleEndian.Uint64(b[48:])
	if len(b) == 32+32 {
		r.Incinerated = binary.LittleEndian.Uint64(b[56:])
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

// SlotCommit is one slot's changes on their way to disk. The bank fills
// it at the slot's end (the accounts are encoded then, so that later
// slots may change them); the committer turns it into one Pebble batch,
// so that the scheduler does not wait for that copy either. Enqueue
// consumes it, buffers included.
type SlotCommit struct {
	Record   SlotRecord
	Statuses []byte // the slot's status value (AppendStatus per transaction)
	History  []byte // the slot's transaction history (AppendHistory), or nil
	Time     int64  // Unix seconds at the slot's end
	Meta     []byte // the meta record (EncodeMeta)

	accounts []byte // per account: key (32), present (1), length (4, little-endian), encoding
	at       int    // StartAccount's mark
}

// AppendDeleted records that the account at key no longer exists.
func (c *SlotCommit) AppendDeleted(key *banking.Pubkey) {
	c.accounts = append(append(c.accounts, key[:]...), 0)
}

// StartAccount begins the record of the account at key and returns the
// buffer its encoding is to be appended to; hand the result to
// EndAccount.
func (c *SlotCommit) StartAccount(key *banking.Pubkey) []byte {
	c.accounts = append(append(c.accounts, key[:]...), 1, 0, 0, 0, 0)
	c.at = len(c.accounts)
	return c.accounts
}

// EndAccount ends the record StartAccount began; b is its buffer with
// the account's encoding appended.
func (c *SlotCommit) EndAccount(b []byte) {
	binary.LittleEndian.PutUint32(b[c.at-4:], uint32(len(b)-c.at))
	c.accounts = b
}

// NewSlotCommit returns a slot commit whose account buffer has room for
// size bytes, reusing one the committer gave back.
func (s *Store) NewSlotCommit(size int) *SlotCommit {
	return &SlotCommit{accounts: s.Buffer(size)}
}

// Buffer returns a buffer the committer gave back, or a new one.
func (s *Store) Buffer(size int) []byte {
	select {
	case b := <-s.buffers:
		if cap(b) >= size {
			return b[:0]
		}
	default:
	}
	return make([]byte, 0, size)
}

// build turns c into a Pebble batch, after appending the slot's record
// to the status log (synced first when sync is set).
func (s *Store) build(c *SlotCommit, sync bool) (*pebble.Batch, error) {
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
	// Every slot has a record in the log, with or without statuses: it
	// is what proves at open that the slot before it was committed.
	loc, err := s.appendStatuses(c.Record.Slot, c.Statuses, sync)
	if err != nil {
		batch.Close()
		return nil, err
	}
	if len(c.Statuses) > 0 {
		batch.Set(binary.BigEndian.AppendUint64([]byte{prefixTxSlot}, c.Record.Slot), loc.encode(), nil)
	}
	if err := addHistory(batch, c.Record.Slot, c.History); err != nil {
		batch.Close()
		return nil, err
	}
	batch.Set(slotTimeKey(c.Record.Slot), binary.LittleEndian.AppendUint64(nil, uint64(c.Time)), nil)
	batch.Set([]byte(keyLogEnd), binary.LittleEndian.AppendUint64(nil, loc.off+loc.n), nil)
	batch.Set(slotKey(c.Record.Slot), c.Record.encode(), nil)
	batch.Set([]byte(keyMeta), c.Meta, nil)
	return batch, nil
}

// ErrStore wraps a failure of the ledger database.
var ErrStore = errors.New("banking: ledger")

// ErrRolledBack reports a ledger whose database is behind what the status
// log proves was committed and made durable: resuming would silently
// undo slots that were reported finalized.
var ErrRolledBack = errors.New("banking: ledger rolled back")

// ErrInUse reports a ledger directory another process holds.
var ErrInUse = errors.New("banking: ledger in use")

// Config configures a Store.
type Config struct {
	// Dir is the ledger directory, which must exist.
	Dir string
	// Sync is the commit mode; the zero value fsyncs every slot.
	Sync SyncMode
	// InMemory keeps the ledger in a memory file system (tests,
	// benchmarks) unless FS is set.
	InMemory bool
	// Reset deletes the ledger in Dir first, after taking its lock
	// (resetLedger: only a tpu ledger, or nothing; ErrNotLedger
	// otherwise).
	Reset bool
	// NoHistory keeps no transaction history: the history reads return
	// ErrNoHistory.
	NoHistory bool
	// FS is the ledger's file system (tests); nil means the OS's, or a
	// memory file system with InMemory.
	FS vfs.FS
	// Logger receives the ledger's errors and Pebble's lines; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Open opens (creating if need be) the ledger database in cfg.Dir and
// starts its committer. A new ledger is empty: ReadMeta finds nothing,
// and the caller writes a genesis (WriteGenesis).
func Open(cfg Config) (*Store, error) {
	fs := cfg.FS
	if fs == nil {
		fs = vfs.Default
		if cfg.InMemory {
			fs = vfs.NewMem()
			if err := fs.MkdirAll(cfg.Dir, 0o755); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrStore, err)
			}
		}
	}
	s := &Store{sync: cfg.Sync, queue: make(chan *SlotCommit, 64), done: make(chan struct{}),
		spare: make(chan *pebble.Batch, 2), buffers: make(chan []byte, 4), dir: cfg.Dir, logger: cfg.Logger, noHistory: cfg.NoHistory}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	s.logger = s.logger.With("ledger", cfg.Dir)
	// Lock before anything else, so that a reset or a check never races
	// another process using the directory.
	lock, err := pebble.LockDirectory(cfg.Dir, fs)
	if err != nil {
		return nil, lockError(cfg.Dir, err)
	}
	s.lock = lock
	if cfg.Reset {
		if err := resetLedger(fs, cfg.Dir); err != nil {
			lock.Close()
			return nil, err
		}
	}
	opts := &pebble.Options{
		Logger: pebbleLogger{s},
		Lock:   lock,
		// Signatures and keys are random bytes: compression costs CPU and
		// saves nothing.
		FormatMajorVersion: pebble.FormatValueSeparation,
		// Pebble's memory, bounded by these (MemoryBound).
		MemTableSize:                ledgerMemTableSize,
		MemTableStopWritesThreshold: ledgerMemTableStop,
		CacheSize:                   ledgerCacheSize,
		FS:                          fs,
	}
	opts.EventListener = &pebble.EventListener{
		// A failed flush or compaction (a full or read-only disk) is
		// retried by Pebble at once and forever.
		BackgroundError: s.backgroundError,
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			s.fail(fmt.Errorf("%w: pebble: data corruption in %s: %w", ErrStore, info.Path, info.Details))
		},
		DiskSlow: func(info pebble.DiskSlowInfo) { s.logger.Warn("ledger disk slow", "info", info.String()) },
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			s.logger.Warn("ledger write stall", "reason", info.Reason)
		},
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
	// Pebble v2.1 has no switch for a stricter WAL tail: it already
	// treats a damaged record followed by valid ones as corruption, and
	// only an ambiguous end of the newest WAL as a torn tail. What a torn
	// tail could hide, the status log's records catch (checkTail).
	if err := checkMarkers(fs, cfg.Dir); err != nil {
		lock.Close()
		return nil, err
	}
	db, err := s.openDB(cfg.Dir, opts)
	if err != nil {
		lock.Close()
		if errors.Is(err, ErrStore) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: open %s: %w", ErrStore, cfg.Dir, err)
	}
	s.db = db
	if err = s.checkFormat(cfg.Dir); err == nil {
		var end uint64
		if end, err = s.readLogEnd(); err == nil {
			s.log, err = openStatusLog(fs, cfg.Dir, end)
			s.logWritten.Store(end)
		}
		if err == nil {
			err = s.checkTail(fs, end)
		}
	}
	if err != nil {
		if s.log != nil {
			s.log.Close()
		}
		db.Close()
		lock.Close()
		return nil, err
	}
	s.lastSync = time.Now()
	go s.run()
	return s, nil
}

// openDB opens Pebble, or returns the first failure reported while it
// opens. Pebble flushes the WALs it replays before Open returns, and
// retries a failed flush forever (a full or read-only disk hung startup
// at full CPU): such an Open is abandoned, its goroutines parked by
// backgroundError until the process exits.
func (s *Store) openDB(dir string, opts *pebble.Options) (*pebble.DB, error) {
	type result struct {
		db  *pebble.DB
		err error
	}
	s.opening = make(chan struct{})
	s.failed = make(chan struct{})
	done := make(chan result, 1)
	go func() {
		db, err := pebble.Open(dir, opts)
		done <- result{db, err}
	}()
	select {
	case r := <-done:
		close(s.opening)
		if r.err == nil {
			if err := s.Err(); err != nil { // Pebble's Fatalf during Open
				r.db.Close()
				return nil, err
			}
		}
		return r.db, r.err
	case <-s.failed:
		return nil, fmt.Errorf("%w (opening %s)", s.Err(), dir)
	}
}

// backgroundError fails the store with a failed flush or compaction.
// While the database opens, it parks the goroutine that reports it (see
// openDB); afterwards it delays Pebble's next attempt by a second, so
// that a full disk does not spin a core and Close still ends.
func (s *Store) backgroundError(err error) {
	s.fail(fmt.Errorf("%w: pebble: %w", ErrStore, err))
	select {
	case <-s.opening:
		time.Sleep(time.Second)
	default:
		select {} // openDB has given up on this database
	}
}

// checkMarkers refuses a database whose format marker is gone: Pebble
// would read its files as another format and fail with a message that
// names no file.
func checkMarkers(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStore, dir, err)
	}
	hasFiles, hasMarker := false, false
	for _, n := range names {
		hasFiles = hasFiles || strings.HasPrefix(n, "MANIFEST-") || strings.HasSuffix(n, ".sst")
		hasMarker = hasMarker || strings.HasPrefix(n, "marker.format-version.")
	}
	if hasFiles && !hasMarker {
		return fmt.Errorf("%w: %s: the database's format marker (marker.format-version.*) is missing: its files are damaged; restore the ledger from a copy, or start afresh with tpu run --reset", ErrStore, dir)
	}
	return nil
}

// lockError explains a failure to lock dir.
func lockError(dir string, err error) error {
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) || strings.Contains(err.Error(), "held by current process") {
		return fmt.Errorf("%w: %w: ledger %s is in use by another process (%w)", ErrStore, ErrInUse, dir, err)
	}
	return fmt.Errorf("%w: lock %s: %w", ErrStore, dir, err)
}

// checkFormat refuses a ledger of another format, and marks a new one
// with this format.
func (s *Store) checkFormat(dir string) error {
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
			err = fmt.Errorf("%w: %q has ledger records but no format record: it was written by an older tpu (ledger format 1) or its database is damaged; this tpu reads format %d", ErrStore, dir, ledgerFormat)
		}
		return err
	}
	if err := s.db.Set([]byte(keyFormat), []byte{ledgerFormat}, pebble.Sync); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return s.Err()
}

// readLogEnd reads the status log's committed length.
func (s *Store) readLogEnd() (uint64, error) {
	v, err := s.get([]byte(keyLogEnd))
	if err != nil || v == nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: malformed status log length", ErrStore)
	}
	return binary.LittleEndian.Uint64(v), nil
}

// pebbleLogger sends Pebble's lines to the store's logger. Fatalf, which
// Pebble calls when it cannot go on (a failed WAL or MANIFEST write, a
// corrupt file), fails the store instead of exiting or panicking: the
// committer checks for it after every commit, so a slot whose commit
// Pebble gave up on never counts as committed, and Open returns it as an
// error.
type pebbleLogger struct{ s *Store }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.s.logger.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.s.logger.Error("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, "pebble: ") {
		msg = "pebble: " + msg
	}
	e := &fatalError{msg: msg, causes: []error{ErrStore}}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.causes = append(e.causes, err)
		}
	}
	l.s.fail(e)
}

// fatalError is what Pebble's Fatalf reported: an ErrStore that also
// wraps the errors among its arguments (ENOSPC, say).
type fatalError struct {
	msg    string
	causes []error
}

func (e *fatalError) Error() string   { return ErrStore.Error() + ": " + e.msg }
func (e *fatalError) Unwrap() []error { return e.causes }

// fail records the store's first failure and logs every one once the
// database is open (before, Open returns it).
func (s *Store) fail(err error) {
	select {
	case <-s.opening:
		s.logger.Error("ledger failed", "err", err)
	default:
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = err
		if s.failed != nil {
			close(s.failed)
		}
	}
	s.mu.Unlock()
}

func (s *Store) run() {
	defer close(s.done)
	for c := range s.queue {
		if s.Err() != nil {
			// A slot failed: the slots queued behind it must not land
			// either, or the ledger would have a gap.
			continue
		}
		durable := s.sync == SyncEachSlot || time.Since(s.lastSync) >= NoSyncInterval
		batch, err := s.build(c, durable)
		if err == nil {
			s.visible.Store(c.Record.Slot)
			opts := pebble.NoSync
			if durable {
				opts = pebble.Sync
			}
			err = batch.Commit(opts)
			if err == nil {
				err = s.Err() // Pebble's Fatalf during the commit
			}
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
		if err != nil && !errors.Is(err, ErrStore) {
			err = fmt.Errorf("%w: commit slot %d: %w", ErrStore, c.Record.Slot, err)
		}
		if err != nil {
			s.fail(err)
		}
		s.mu.Lock()
		failed := s.err != nil
		listeners, changes := s.listeners, s.changeListeners
		s.mu.Unlock()
		if failed {
			continue // nothing after a failed slot may count as committed
		}
		s.committed.Store(c.Record.Slot)
		if durable {
			s.durable.Store(c.Record.Slot)
			s.lastSync = time.Now()
			if err := s.writeMark(c.Record.Slot); err != nil {
				s.fail(fmt.Errorf("%w: mark slot %d durable in %s: %w", ErrStore, c.Record.Slot, statusLogName, err))
			}
		}
		for _, l := range listeners {
			l(c.Record)
		}
		if len(changes) > 0 {
			sc := &SlotChanges{Record: c.Record, accounts: c.accounts}
			for _, l := range changes {
				l(sc)
			}
		}
		// After the listeners: they borrow c.accounts.
		for _, b := range [][]byte{c.accounts, c.Statuses, c.History} {
			if cap(b) == 0 {
				continue
			}
			select {
			case s.buffers <- b:
			default:
			}
		}
	}
}

// maxRetainedBatch is the largest batch buffer kept for reuse (a slot of
// 200,000 transactions is about 25 MB).
const maxRetainedBatch = 64 << 20

// newBatch returns an empty batch, reusing a committed one if there is
// one.
func (s *Store) newBatch(size int) *pebble.Batch {
	select {
	case b := <-s.spare:
		return b
	default:
		return s.db.NewBatch(pebble.WithInitialSizeBytes(size), pebble.WithMaxRetainedSizeBytes(maxRetainedBatch))
	}
}

// Enqueue hands a slot to the committer, consuming c.
func (s *Store) Enqueue(c *SlotCommit) { s.queue <- c }

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

// ReadMeta reads the meta record (EncodeMeta): last committed slot (8), lamports
// burned since genesis (8), genesis seed (the rest).
func (s *Store) ReadMeta() (slot, burned uint64, seed string, ok bool, err error) {
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

// ReadBlockhashSeed returns the genesis BlockhashSeed the ledger keeps
// ("" for a ledger made before it was kept).
func (s *Store) ReadBlockhashSeed() (string, error) {
	v, closer, err := s.db.Get([]byte(keyBlockhashSeed))
	if errors.Is(err, pebble.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: read genesis blockhash seed: %w", ErrStore, err)
	}
	defer closer.Close()
	return string(v), nil
}

// scan calls f for every key under prefix, in order.
func (s *Store) scan(prefix []byte, f func(k, v []byte) error) error {
	return s.scanRange(prefix, upperBound(prefix), f)
}

// scanRange calls f for every key in [lower, upper), in order.
func (s *Store) scanRange(lower, upper []byte, f func(k, v []byte) error) error {
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
func (s *Store) get(key []byte) ([]byte, error) {
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

// ErrNotLedger reports a reset of a directory that does not hold a tpu
// ledger.
var ErrNotLedger = errors.New("banking: not a tpu ledger")

// resetLedger deletes the ledger in dir, whose lock the caller holds. It
// deletes only a tpu ledger, one holding the status log and nothing but
// Pebble's and tpu's own files, or an empty directory; anything else is
// refused (ErrNotLedger) and left as it is.
func resetLedger(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("%w: reset: %w", ErrStore, err)
	}
	isLedger := false
	var remove []string
	for _, n := range names {
		switch {
		case n == lockName:
			continue // held: removed with the directory's contents would unlock nothing
		case n == statusLogName:
			isLedger = true
		case !ledgerFile(n):
			return fmt.Errorf("%w: %w: --reset refuses %s: it holds %q, which is not a ledger file; delete it yourself if you mean to", ErrStore, ErrNotLedger, dir, n)
		}
		remove = append(remove, n)
	}
	if !isLedger && len(remove) > 0 {
		return fmt.Errorf("%w: %w: --reset refuses %s: it holds database files %v but no %s, so it is not a tpu ledger", ErrStore, ErrNotLedger, dir, remove[:min(len(remove), 5)], statusLogName)
	}
	for _, n := range remove {
		if err := fs.Remove(fs.PathJoin(dir, n)); err != nil {
			return fmt.Errorf("%w: reset: %w", ErrStore, err)
		}
	}
	return nil
}

const lockName = "LOCK"

// ledgerFile reports whether name is one Pebble writes in its directory.
func ledgerFile(name string) bool {
	if name == "CURRENT" || strings.HasPrefix(name, "MANIFEST-") || strings.HasPrefix(name, "OPTIONS-") || strings.HasPrefix(name, "marker.") {
		return true
	}
	for _, ext := range []string{".log", ".sst", ".blob", ".dbtmp"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}
