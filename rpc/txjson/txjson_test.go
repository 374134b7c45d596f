package txjson

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/txview"
)

// build signs a transfer of 5 lamports to a recipient, and in a v0
// message loads the recipient through a lookup table.
func build(t *testing.T, version txview.Version) txview.View {
	t.Helper()
	payer := ed25519.NewKeyFromSeed(make([]byte, 32))
	from, to := txview.PublicKey(payer), [32]byte{9}
	m := txview.Message{Version: version, Payer: from, Blockhash: [32]byte{1}, Instructions: []txview.Ix{txview.Transfer(from, to, 5)}}
	if version == txview.V0 {
		m.Tables = []txview.LookupTable{{Key: [32]byte{7}, Addresses: [][32]byte{{8}, to}}}
	}
	raw, err := m.Sign(payer)
	if err != nil {
		t.Fatal(err)
	}
	v, err := txview.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestEncode(t *testing.T) {
	for _, c := range []struct {
		version txview.Version
		keys    int
		lookups string
	}{
		{txview.Legacy, 3, `"addressTableLookups":[]`},
		{txview.V0, 2, `"addressTableLookups":[{"accountKey":"` + base58.Encode([]byte{7, 31: 0}) + `","writableIndexes":[1],"readonlyIndexes":[]}]`},
	} {
		v := build(t, c.version)
		tx := Encode(v)
		m := tx.Message
		if len(tx.Signatures) != 1 || tx.Signatures[0] != base58.Encode(v.Signature(0)[:]) {
			t.Errorf("%v: signatures %v", c.version, tx.Signatures)
		}
		if len(m.AccountKeys) != c.keys || m.AccountKeys[0] != base58.Encode(v.StaticKey(0)[:]) {
			t.Errorf("%v: keys %v", c.version, m.AccountKeys)
		}
		if m.Header != (Header{1, 0, 1}) || m.RecentBlockhash != base58.Encode([]byte{1, 31: 0}) {
			t.Errorf("%v: header %+v, blockhash %s", c.version, m.Header, m.RecentBlockhash)
		}
		if len(m.Instructions) != 1 || m.Instructions[0].Data != base58.Encode([]byte{2, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}) {
			t.Errorf("%v: instructions %+v", c.version, m.Instructions)
		}
		b, err := json.Marshal(tx)
		if err != nil {
			t.Fatal(err)
		}
		// Account indexes are numbers, not base64 bytes; every list is
		// present, empty rather than null.
		if !strings.Contains(string(b), `"accounts":[0,`) || !strings.Contains(string(b), c.lookups) || strings.Contains(string(b), "null") {
			t.Errorf("%v: %s", c.version, b)
		}
	}
}
