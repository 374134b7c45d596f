package ledger

// The ledger's memory outside the Go heap. Pebble allocates its memtable
// arenas and its block cache by hand (cgo's calloc, or Go slices it
// tracks itself without cgo), so neither shows in the Go runtime's
// figures; RSS holds them once their pages are touched. Both are bounded
// by the Options store.go sets from these constants:
//
//   - memtables: a write finding the queued memtables (the mutable one
//     included) at MemTableStopWritesThreshold x MemTableSize or more
//     waits for a flush (Pebble's DB.maybeInduceWriteStall), so the queue
//     is at most that plus the one memtable a rotation just allocated;
//     one more, flushed, waits to be recycled (DB.newMemTable's
//     memTableRecycle). A memtable an open iterator still reads stays
//     as a zombie until the iterator closes; the ledger's iterators are
//     short scans.
//   - block cache: ledgerCacheSize. Pebble reserves each memtable's size
//     in the cache (Cache.Reserve), so while the memtables exceed it the
//     cache holds next to nothing.
//
// So Pebble's hand-allocated memory stays under MemoryBound
// (264 MiB): (2 + 2) x 64 MiB of memtables and 8 MiB of cache. In a
// steady run two or three memtables exist and their pages, once touched,
// stay resident while the arena is recycled: RSS climbs by up to three
// memtables over the first flushes (64 MiB each, after a warm-up of
// smaller ones that double from 256 KiB) and then holds.
const (
	// ledgerMemTableSize is Pebble's MemTableSize: a memtable's size in
	// steady state. Larger memtables mean fewer, larger flushes and L0
	// files.
	ledgerMemTableSize = 64 << 20
	// ledgerMemTableStop is Pebble's MemTableStopWritesThreshold (its
	// default): how many memtables' worth may queue before writes wait.
	ledgerMemTableStop = 2
	// ledgerCacheSize is Pebble's CacheSize (its default): the block
	// cache. The ledger's reads go to the accounts and statuses held in
	// memory first; the cache serves the history RPC reads.
	ledgerCacheSize = 8 << 20

	// MemoryBound bounds Memory's MemTables + BlockCache, in
	// bytes (see above).
	MemoryBound = (ledgerMemTableStop+2)*ledgerMemTableSize + ledgerCacheSize
)

// Memory is Pebble's hand-allocated memory at one moment
// (pebble.DB.Metrics).
type Memory struct {
	// MemTables is the bytes of the memtable arenas allocated: the queued
	// memtables and large batches (Metrics.MemTable.Size) and the zombie
	// ones, including the one kept for recycling (MemTable.ZombieSize).
	MemTables uint64
	// MemTableCount counts them (MemTable.Count + ZombieCount).
	MemTableCount int64
	// BlockCache is the bytes of blocks in the block cache
	// (Metrics.BlockCache.Size).
	BlockCache uint64
}

// Memory returns the ledger's Pebble memory now. Safe from any
// goroutine (Pebble's Metrics is); the zero value once the ledger is
// closed.
func (s *Store) Memory() Memory {
	s.metricsMu.Lock()
	defer s.metricsMu.Unlock()
	if s.shut {
		return Memory{}
	}
	m := s.db.Metrics()
	return Memory{
		MemTables:     m.MemTable.Size + m.MemTable.ZombieSize,
		MemTableCount: m.MemTable.Count + m.MemTable.ZombieCount,
		BlockCache:    uint64(m.BlockCache.Size),
	}
}
