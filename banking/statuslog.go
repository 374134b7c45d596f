package banking

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The status log holds each slot's status value, appended at the slot's
// commit, outside Pebble: a slot's statuses are megabytes of random
// signatures, written once and read rarely, and Pebble would copy them
// into its batch, its memtable and a flushed file (the bench measured 112
// bytes a transaction through Pebble costing a third of banking's
// throughput). The Pebble batch of the slot records where the value lies
// ("t" + slot: offset, length, CRC-32C) and where the log ends ("l"), so
// the log is only as long as Pebble says: bytes past that end belong to a
// slot whose batch never committed, and the next slot overwrites them.
// With SyncEachSlot the log is synced before the batch.
const statusLogName = "tpu-statuses.log"

const (
	keyLogEnd     = "l"
	keyFormat     = "v"
	ledgerFormat  = 2 // 1: statuses inside Pebble
	statusLocSize = 8 + 8 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// statusLoc is where a slot's status value lies in the log.
type statusLoc struct {
	off, n uint64
	crc    uint32
}

func (l statusLoc) encode() []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, statusLocSize), l.off)
	b = binary.LittleEndian.AppendUint64(b, l.n)
	return binary.LittleEndian.AppendUint32(b, l.crc)
}

func decodeStatusLoc(b []byte) (statusLoc, error) {
	if len(b) != statusLocSize {
		return statusLoc{}, fmt.Errorf("%w: malformed status location", ErrStore)
	}
	return statusLoc{off: binary.LittleEndian.Uint64(b), n: binary.LittleEndian.Uint64(b[8:]), crc: binary.LittleEndian.Uint32(b[16:])}, nil
}

// openStatusLog opens (creating) the log and checks that it holds at
// least end bytes, the end the ledger records.
func openStatusLog(fs vfs.FS, dir string, end uint64) (vfs.File, error) {
	path := fs.PathJoin(dir, statusLogName)
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrStore, path, err)
	}
	fi, err := f.Stat()
	if err == nil && uint64(fi.Size()) < end {
		err = fmt.Errorf("%w: %s holds %d bytes but the ledger records %d: the last slots' statuses were lost (a machine crash with --sync nosync?); start afresh", ErrStore, path, fi.Size(), end)
	}
	if err == nil {
		// The file's directory entry must be as durable as the slots
		// that will point into it.
		err = syncDir(fs, dir)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("%w: open %s: %w", ErrStore, dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: sync %s: %w", ErrStore, dir, err)
	}
	return nil
}

// appendStatuses writes a slot's status value where the log was written
// to and, with SyncEachSlot, syncs it; the ledger's committed length ("l")
// moves only with the slot's batch.
func (s *store) appendStatuses(v []byte) (statusLoc, error) {
	loc := statusLoc{off: s.logWritten.Load(), n: uint64(len(v)), crc: crc32.Checksum(v, castagnoli)}
	if _, err := s.log.WriteAt(v, int64(loc.off)); err != nil {
		return loc, err
	}
	s.logWritten.Store(loc.off + loc.n) // before the batch names it
	if s.sync == SyncEachSlot {
		if err := s.log.SyncData(); err != nil {
			return loc, err
		}
	}
	return loc, nil
}

// slotStatuses reads a committed slot's status value (nil when it
// executed nothing). It is safe for concurrent use.
func (s *store) slotStatuses(slot uint64) ([]byte, error) {
	b, err := s.get(binary.BigEndian.AppendUint64([]byte{prefixTxSlot}, slot))
	if err != nil || b == nil {
		return nil, err
	}
	loc, err := decodeStatusLoc(b)
	if err != nil {
		return nil, err
	}
	// What was written bounds every slot's value: a damaged location
	// must not size an allocation.
	if end := s.logWritten.Load(); loc.off > end || loc.n > end-loc.off {
		return nil, fmt.Errorf("%w: slot %d's statuses lie at %d+%d, past the %d bytes written to %s", ErrStore, slot, loc.off, loc.n, end, statusLogName)
	}
	v := make([]byte, loc.n)
	if _, err := s.log.ReadAt(v, int64(loc.off)); err != nil { // a slot with no statuses has no location
		return nil, fmt.Errorf("%w: read slot %d's statuses: %w", ErrStore, slot, err)
	}
	if crc32.Checksum(v, castagnoli) != loc.crc {
		return nil, fmt.Errorf("%w: slot %d's statuses in %s fail their checksum", ErrStore, slot, statusLogName)
	}
	return v, nil
}
