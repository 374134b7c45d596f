package ledger_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
)

// Damage to the ledger's files gives one clear error at open: never a
// panic, never a silent resume from older state.

// ledgerWithSlots makes a ledger of n slots, one transfer each, cleanly
// closed, and returns its config.
func ledgerWithSlots(t *testing.T, n int, flush bool) bank.Config {
	t.Helper()
	cfg := bank.Config{Dir: t.TempDir(), Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: n}}
	from := make([]int, n)
	for i := range from {
		from[i] = i
	}
	runSlots(t, cfg, from...)
	if flush {
		st, err := ledger.Open(ledger.Config{Dir: cfg.Dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.DB().Flush(); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// files returns the names in dir with suffix, sorted.
func files(t *testing.T, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) && e.Name() != ledger.StatusLogName {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCorruptLedger(t *testing.T) {
	const slots = 40
	for _, tc := range []struct {
		name   string
		flush  bool // the accounts in an sst, not only the WAL
		damage func(t *testing.T, dir string)
		want   []string // in the error; nil: it opens, with every slot
	}{
		{"wal-flipped-byte", false, func(t *testing.T, dir string) {
			wals := files(t, dir, ".log")
			p := filepath.Join(dir, wals[len(wals)-1])
			flipByte(t, p, size(t, p)/2)
		}, []string{"wal"}},
		{"wal-truncated", false, func(t *testing.T, dir string) {
			wals := files(t, dir, ".log")
			p := filepath.Join(dir, wals[len(wals)-1])
			if err := os.Truncate(p, size(t, p)/2); err != nil {
				t.Fatal(err)
			}
		}, []string{ledger.StatusLogName, "lost durable slots"}},
		{"sst-flipped-byte", true, func(t *testing.T, dir string) {
			ssts := files(t, dir, ".sst")
			if len(ssts) == 0 {
				t.Fatal("no sst after a flush")
			}
			p := filepath.Join(dir, ssts[0])
			flipByte(t, p, size(t, p)/3)
		}, []string{"corrupt"}},
		{"status-log-flipped-byte", false, func(t *testing.T, dir string) {
			p := filepath.Join(dir, ledger.StatusLogName)
			flipByte(t, p, size(t, p)-ledger.RecordHeader-20) // inside the last slot's signature, before its durable mark
		}, []string{ledger.StatusLogName, "checksum"}},
		{"status-log-truncated", false, func(t *testing.T, dir string) {
			p := filepath.Join(dir, ledger.StatusLogName)
			if err := os.Truncate(p, size(t, p)/2); err != nil {
				t.Fatal(err)
			}
		}, []string{ledger.StatusLogName, "holds"}},
		{"manifest-marker-deleted", false, func(t *testing.T, dir string) {
			ms, _ := filepath.Glob(filepath.Join(dir, "marker.manifest.*"))
			if len(ms) != 1 {
				t.Fatalf("manifest markers %v", ms)
			}
			if err := os.Remove(ms[0]); err != nil {
				t.Fatal(err)
			}
		}, nil}, // Pebble finds the newest manifest without it
		{"format-marker-deleted", false, func(t *testing.T, dir string) {
			ms, _ := filepath.Glob(filepath.Join(dir, "marker.format-version.*"))
			if len(ms) != 1 {
				t.Fatalf("format markers %v", ms)
			}
			if err := os.Remove(ms[0]); err != nil {
				t.Fatal(err)
			}
		}, []string{"marker.format-version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ledgerWithSlots(t, slots, tc.flush)
			tc.damage(t, cfg.Dir)
			b, err := bank.Open(cfg)
			if err == nil {
				defer b.Close()
				if tc.want == nil && b.Slot() == slots+1 {
					return
				}
				t.Fatalf("opened a damaged ledger at slot %d (it had %d)", b.Slot(), slots+1)
			}
			t.Logf("%v", err)
			if !errors.Is(err, ledger.ErrStore) {
				t.Fatalf("not an ErrStore: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(w)) {
					t.Errorf("error does not mention %q: %v", w, err)
				}
			}
			if strings.Contains(err.Error(), "older tpu") {
				t.Errorf("error blames an older tpu: %v", err)
			}
		})
	}
}

// The last slot alone lost from the database (its batch gone from the
// WAL, the slots before it intact) is caught by the mark written after it
// became durable: no record follows it to prove it.
func TestLastDurableSlotLost(t *testing.T) {
	const slots = 5
	cfg := ledgerWithSlots(t, slots, false)
	st, err := ledger.Open(ledger.Config{Dir: cfg.Dir})
	if err != nil {
		t.Fatal(err)
	}
	last, burned, seed, _, err := st.ReadMeta()
	if err != nil || last != slots {
		t.Fatalf("meta %d %v", last, err)
	}
	v, err := st.Get(binary.BigEndian.AppendUint64([]byte{ledger.PrefixTxSlot}, last))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := ledger.DecodeStatusLoc(v)
	if err != nil {
		t.Fatal(err)
	}
	// Put the database back to where it was before the last slot.
	batch := st.DB().NewBatch()
	batch.Set([]byte(ledger.KeyLogEnd), binary.LittleEndian.AppendUint64(nil, loc.Off-ledger.RecordHeader), nil)
	meta := binary.LittleEndian.AppendUint64(nil, last-1)
	meta = binary.LittleEndian.AppendUint64(meta, burned)
	batch.Set([]byte(ledger.KeyMeta), append(meta, seed...), nil)
	batch.Delete(ledger.SlotKey(last), nil)
	batch.Delete(binary.BigEndian.AppendUint64([]byte{ledger.PrefixTxSlot}, last), nil)
	if err := batch.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	st.Close()
	b, err := bank.Open(cfg)
	if err == nil {
		b.Close()
		t.Fatalf("resumed at slot %d without slot %d, which was durable", b.Slot(), last)
	}
	if !errors.Is(err, ledger.ErrRolledBack) || !strings.Contains(err.Error(), fmt.Sprintf("slots %d-%d", last, last)) {
		t.Fatalf("lost last slot: %v", err)
	}
}
