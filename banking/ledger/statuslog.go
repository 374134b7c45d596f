package ledger

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
	"strings"

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
// When a slot is made durable the log is synced before the batch.
//
// Every slot appends one record, with or without statuses:
//
//	slot (8) | durable (8) | length (8) | CRC-32C of the statuses (4) | CRC-32C of the 28 bytes before (4) | statuses (length)
//
// all little-endian, where durable is the last slot made durable (synced)
// before the record was written. A slot's record is written only after
// the slot before it committed, so a complete record past the end Pebble
// records proves that Pebble once held the slots through its durable
// field: if Pebble's last slot is below it, Pebble lost durable slots (a
// damaged WAL or sst taken for a torn tail), and Open refuses with
// ErrRolledBack instead of resuming from the older state. An incomplete
// record at the end (a crash mid-write) is a torn tail and is accepted.
//
// After a slot is made durable, a mark (a header alone, its length
// markLen, slot and durable both the slot) is written where the next
// record will go, unsynced until Close, so that the last durable slot is
// proven too: the next slot's record overwrites the mark and carries the
// same proof in its durable field.
const statusLogName = "tpu-statuses.log"

const (
	keyLogEnd     = "l"
	keyFormat     = "v"
	ledgerFormat  = 4 // 1: statuses inside Pebble; 2: status log without record headers; 3: history records without sections (format 4 reads them: upgraded on open)
	statusLocSize = 8 + 8 + 4
	recordHeader  = 8 + 8 + 8 + 4 + 4
	markLen       = ^uint64(0) // the length field of a mark
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

// logRecord is a status log record's header.
type logRecord struct {
	slot, durable, n uint64
	crc              uint32 // of the statuses
}

func (r logRecord) encode(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, r.slot)
	b = binary.LittleEndian.AppendUint64(b, r.durable)
	b = binary.LittleEndian.AppendUint64(b, r.n)
	b = binary.LittleEndian.AppendUint32(b, r.crc)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[len(b)-28:], castagnoli))
}

// decodeLogRecord reads a header; ok is false if its checksum fails.
func decodeLogRecord(b []byte) (r logRecord, ok bool) {
	if len(b) < recordHeader || crc32.Checksum(b[:28], castagnoli) != binary.LittleEndian.Uint32(b[28:]) {
		return r, false
	}
	return logRecord{slot: binary.LittleEndian.Uint64(b), durable: binary.LittleEndian.Uint64(b[8:]),
		n: binary.LittleEndian.Uint64(b[16:]), crc: binary.LittleEndian.Uint32(b[24:])}, true
}

// appendStatuses writes a slot's record where the log was written to and,
// when sync is set, syncs the log; the ledger's committed length ("l")
// moves only with the slot's batch. The location returned is the
// statuses'.
func (s *Store) appendStatuses(slot uint64, v []byte, sync bool) (statusLoc, error) {
	off := s.logWritten.Load()
	rec := logRecord{slot: slot, durable: s.durable.Load(), n: uint64(len(v)), crc: crc32.Checksum(v, castagnoli)}
	var hdr [recordHeader]byte
	if _, err := s.log.WriteAt(rec.encode(hdr[:0]), int64(off)); err != nil {
		return statusLoc{}, err
	}
	loc := statusLoc{off: off + recordHeader, n: rec.n, crc: rec.crc}
	if len(v) > 0 {
		if _, err := s.log.WriteAt(v, int64(loc.off)); err != nil {
			return loc, err
		}
	}
	s.logWritten.Store(loc.off + loc.n) // before the batch names it
	if sync {
		if err := s.log.SyncData(); err != nil {
			return loc, err
		}
	}
	return loc, nil
}

// writeMark records that slot is durable where the next record will go.
func (s *Store) writeMark(slot uint64) error {
	var hdr [recordHeader]byte
	_, err := s.log.WriteAt(logRecord{slot: slot, durable: slot, n: markLen}.encode(hdr[:0]), int64(s.logWritten.Load()))
	return err
}

// checkTail reads the complete records past end, the log's committed
// length, and refuses the ledger if one proves that Pebble lost slots
// that were durable.
func (s *Store) checkTail(fs vfs.FS, end uint64) error {
	last, _, _, _, err := s.ReadMeta()
	if err != nil {
		return err
	}
	fi, err := s.log.Stat()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStore, statusLogName, err)
	}
	size := uint64(fi.Size())
	var hdr [recordHeader]byte
	var first, lastSeen, durable uint64
	found := false
	var buf []byte
	for off := end; size-off >= recordHeader; {
		if _, err := s.log.ReadAt(hdr[:], int64(off)); err != nil {
			return fmt.Errorf("%w: read %s: %w", ErrStore, statusLogName, err)
		}
		r, ok := decodeLogRecord(hdr[:])
		if ok && r.n == markLen {
			if !found {
				first = r.slot
			}
			found, lastSeen, durable = true, max(lastSeen, r.slot), max(durable, r.durable)
			break // nothing follows a mark
		}
		if !ok || r.n > size-off-recordHeader {
			break // a torn or stale tail
		}
		if uint64(cap(buf)) < r.n {
			buf = make([]byte, r.n)
		}
		buf = buf[:r.n]
		if _, err := s.log.ReadAt(buf, int64(off+recordHeader)); err != nil {
			return fmt.Errorf("%w: read %s: %w", ErrStore, statusLogName, err)
		}
		if crc32.Checksum(buf, castagnoli) != r.crc {
			break
		}
		if !found {
			first = r.slot
		}
		found = true
		lastSeen = r.slot
		durable = max(durable, r.durable)
		off += recordHeader + r.n
	}
	if !found || durable <= last {
		return nil
	}
	wals, _ := fs.List(s.dir)
	var named []string
	for _, n := range wals {
		if strings.HasSuffix(n, ".log") && n != statusLogName {
			named = append(named, n)
		}
	}
	sort.Strings(named)
	return fmt.Errorf("%w: %w: %s: the database ends at slot %d, but %s holds complete, checksummed records of slots %d-%d past that point, written when slots through %d were durable: the database lost durable slots %d-%d (a damaged or truncated WAL %v, or a damaged sst); refusing to resume from older state: restore the ledger from a copy, or start afresh with tpu run --reset",
		ErrStore, ErrRolledBack, s.dir, last, statusLogName, first, lastSeen, durable, last+1, durable, named)
}

// slotStatuses reads a committed slot's status value (nil when it
// executed nothing). It is safe for concurrent use.
func (s *Store) slotStatuses(slot uint64) ([]byte, error) {
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
