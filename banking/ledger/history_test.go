package ledger

import (
	"crypto/ed25519"
	"slices"
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
