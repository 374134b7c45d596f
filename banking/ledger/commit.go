package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tpugo/tpu/banking"
)

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

// fatalError is what Pebble's Fatalf reported: an ErrStore that also
// wraps the errors among its arguments (ENOSPC, say).
type fatalError struct {
	msg    string
	causes []error
}

func (e *fatalError) Error() string { return ErrStore.Error() + ": " + e.msg }

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
