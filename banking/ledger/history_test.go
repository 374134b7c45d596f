package ledger

import (
	"crypto/ed25519"
	"slices"
	"strings"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

func TestStaticKeys(t *testing.T) {
	legacy := signTx(t, false)
	v, err := txview.Parse(legacy)
	if err != nil {
		t.Fatal(err)
	}
	keys, ok := staticKeys(legacy)
	if !ok || !slices.Equal(keys, v.StaticKeys()) {
		t.Fatalf("legacy: %v", ok)
	}
	v0 := signTx(t, true)
	v, err = txview.Parse(v0)
	if err != nil {
		t.Fatal(err)
	}
	if keys, ok := staticKeys(v0); !ok || !slices.Equal(keys, v.StaticKeys()) {
		t.Fatalf("v0: %v", ok)
	}
	for _, bad := range [][]byte{nil, {0x80}, legacy[:70], {1}} {
		if _, ok := staticKeys(bad); ok {
			t.Fatalf("%x: accepted", bad)
		}
	}
}

// FuzzStaticKeys: staticKeys never panics, and on every transaction
// txview.Parse accepts it finds the same keys.
func FuzzStaticKeys(f *testing.F) {
	f.Add(signTx(f, false))
	f.Add(signTx(f, true))
	f.Fuzz(func(t *testing.T, tx []byte) {
		keys, ok := staticKeys(tx)
		v, err := txview.Parse(tx)
		if err != nil {
			return
		}
		if !ok || !slices.Equal(keys, v.StaticKeys()) {
			t.Fatalf("staticKeys %x %v, Parse %x", keys, ok, v.StaticKeys())
		}
	})
}

// TestAppendHistoryAllocs: booking a transaction into the slot's history
// allocates nothing once the buffer has grown.
func TestAppendHistoryAllocs(t *testing.T) {
	e := &HistoryEntry{Tx: signTx(t, false), Index: 1, Fee: 5000, Units: 150, Writable: 3, Balances: make([]uint64, 6)}
	h := make([]byte, 0, 1<<20)
	allocs := testing.AllocsPerRun(1000, func() {
		if len(h) > 1<<19 {
			h = h[:0]
		}
		h = AppendHistory(h, e)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per transaction", allocs)
	}
}

// signTx signs a transfer between two keys of this test, legacy or v0.
func signTx(t testing.TB, v0 bool) []byte {
	t.Helper()
	from := ed25519.NewKeyFromSeed(make([]byte, 32))
	to := banking.Pubkey{0xfe, 1}
	m := txview.Message{Payer: txview.PublicKey(from), Blockhash: banking.Pubkey{1}, Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(from), to, 1)}}
	if v0 {
		m.Version = txview.V0
	}
	tx, err := m.Sign(from)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestHistorySections: a record with inner instructions keeps them, and
// its bytes, balances and loaded addresses, through its sections; one
// without has none, as a format 3 record; damaged sections are refused.
func TestHistorySections(t *testing.T) {
	inner := []banking.Inner{
		{Outer: 0, StackHeight: 2, Program: 3, Accounts: []byte{0, 1}, Data: []byte{2, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0}},
		{Outer: 1, StackHeight: 2, Program: 3, Failed: true, Accounts: []byte{1}, Data: []byte{8, 0, 0, 0}},
	}
	tx := signTx(t, true)
	loaded := []banking.Pubkey{{7}}
	e := &HistoryEntry{Tx: tx, Index: 4, Fee: 5000, Units: 300, Writable: 3, Balances: []uint64{1, 2, 3, 4, 5, 6, 7, 8}, Loaded: loaded, Inner: inner}
	rec := AppendHistory(nil, e)[8:] // past the length and the index
	r, err := decodeHistory(9, 4, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Tx, tx) || !slices.Equal(r.Pre, []uint64{1, 2, 3, 4}) || !slices.Equal(r.Post, []uint64{5, 6, 7, 8}) || !slices.Equal(r.Loaded, loaded) {
		t.Fatalf("record %+v", r)
	}
	got := r.InnerInstructions()
	if len(got) != 2 {
		t.Fatalf("inner %+v", got)
	}
	for i := range inner {
		if got[i].Outer != inner[i].Outer || got[i].StackHeight != 2 || got[i].Program != 3 || got[i].Failed != inner[i].Failed ||
			!slices.Equal(got[i].Accounts, inner[i].Accounts) || !slices.Equal(got[i].Data, inner[i].Data) {
			t.Fatalf("inner %d: %+v, want %+v", i, got[i], inner[i])
		}
	}
	e.Inner = nil
	if r, err := decodeHistory(9, 4, AppendHistory(nil, e)[8:]); err != nil || r.Inner != nil || !slices.Equal(r.Loaded, loaded) {
		t.Fatalf("without sections: %v %+v", err, r)
	}
	for _, cut := range []int{1, 3, 6} {
		bad := slices.Clone(rec[:len(rec)-cut])
		if _, err := decodeHistory(9, 4, bad); err == nil {
			t.Fatalf("cut %d: accepted", cut)
		}
	}
	bad := slices.Clone(rec)
	bad[len(bad)-1] = 2 // an unknown sections version
	if _, err := decodeHistory(9, 4, bad); err == nil {
		t.Fatal("unknown version accepted")
	}
}

// TestFormatUpgrade: a format 3 ledger opens and is marked format 4;
// another format is refused with the reset hint.
func TestFormatUpgrade(t *testing.T) {
	dir := t.TempDir()
	set := func(v byte) {
		s, err := Open(Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.db.Set([]byte(keyFormat), []byte{v}, nil); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	set(3)
	s, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatalf("format 3: %v", err)
	}
	if v, _ := s.get([]byte(keyFormat)); !slices.Equal(v, []byte{ledgerFormat}) || ledgerFormat != 4 {
		t.Fatalf("marker %v", v)
	}
	s.Close()
	set(2)
	if _, err := Open(Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), "--reset") {
		t.Fatalf("format 2: %v", err)
	}
}
