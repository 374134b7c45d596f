package ledger

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// Memory reports what Pebble's Metrics say at the same moment, as
// the memtables rotate and flush; zero once the bank is closed.
func TestLedgerMemory(t *testing.T) {
	s, err := Open(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// same reads Memory between two readings of Pebble's metrics
	// that agree (a flush may finish between two readings: then again).
	same := func(what string) Memory {
		t.Helper()
		for range 1000 {
			before := s.db.Metrics()
			got := s.Memory()
			after := s.db.Metrics()
			want := Memory{
				MemTables:     before.MemTable.Size + before.MemTable.ZombieSize,
				MemTableCount: before.MemTable.Count + before.MemTable.ZombieCount,
				BlockCache:    uint64(before.BlockCache.Size),
			}
			if after.MemTable != before.MemTable || after.BlockCache.Size != before.BlockCache.Size {
				continue
			}
			if got != want {
				t.Fatalf("%s: Memory %+v, Pebble's metrics %+v", what, got, want)
			}
			return got
		}
		t.Fatalf("%s: Pebble's metrics never held still", what)
		return Memory{}
	}
	open := same("opened")
	if open.MemTables == 0 || open.MemTableCount < 1 || open.MemTables > MemoryBound {
		t.Fatalf("opened: %+v: want a memtable, under the bound %d", open, MemoryBound)
	}
	// 8 MiB in 256 KiB values: memtables of 256 KiB doubling up rotate
	// several times and flush.
	v := bytes.Repeat([]byte{7}, 256<<10)
	for i := range 32 {
		if err := s.db.Set([]byte{'x', byte(i)}, v, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Read some back through the block cache.
	for i := range 4 {
		got, closer, err := s.db.Get([]byte{'x', byte(i)})
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("get %d: %v", i, err)
		}
		closer.Close()
	}
	wrote := same("written")
	if wrote.MemTables <= open.MemTables || wrote.MemTables > MemoryBound {
		t.Fatalf("written: %+v, opened %+v: want larger memtables, under the bound %d", wrote, open, MemoryBound)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if m := s.Memory(); m != (Memory{}) {
		t.Fatalf("closed: %+v, want zero", m)
	}
}
