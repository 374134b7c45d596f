package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

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

// lockError explains a failure to lock dir. The lock file is created
// before it is locked: a permission error from creating it (an
// *os.PathError) is the directory's permissions; from the lock itself
// (a bare errno, EACCES or EAGAIN) it is another process's lock.
func lockError(dir string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: ledger %s: permission denied: cannot create its lock file, check the directory's owner and mode (%w)", ErrStore, dir, err)
	}
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
	if len(v) == 1 && v[0] == ledgerFormat-1 {
		// Format 3 differs only in history records without sections,
		// which format 4 reads as they are: upgrade the marker, so that
		// an older tpu refuses the ledger rather than misread records
		// with sections.
		s.logger.Info("ledger: upgrading format 3 to 4", "dir", dir)
	} else if v != nil {
		if len(v) != 1 || v[0] != ledgerFormat {
			return fmt.Errorf("%w: %q has ledger format %v; this tpu reads format %d: start afresh with tpu run --reset", ErrStore, dir, v, ledgerFormat)
		}
		return nil
	} else if m, err := s.get([]byte(keyMeta)); err != nil || m != nil {
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
