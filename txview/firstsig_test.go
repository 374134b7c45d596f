package txview

import "testing"

func TestFirstSignature(t *testing.T) {
	k1 := key(1)
	m := Message{Payer: PublicKey(k1), Instructions: []Ix{Transfer(PublicKey(k1), PublicKey(key(2)), 1)}}
	tx, err := m.Sign(k1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Parse(tx)
	if err != nil {
		t.Fatal(err)
	}
	sig, ok := FirstSignature(tx)
	if !ok || *sig != *v.Signature(0) {
		t.Fatalf("FirstSignature = %x, %v; Parse says %x", sig, ok, v.Signature(0))
	}
	if &sig[0] != &tx[1] {
		t.Error("FirstSignature copied: it should point into tx")
	}
	// A two-byte count (128 signatures, far more than fit): the signature
	// starts after both bytes.
	two := append([]byte{0x80, 0x01}, make([]byte, 64)...)
	two[2] = 7
	if sig, ok := FirstSignature(two); !ok || sig[0] != 7 {
		t.Errorf("two-byte count: %v %v", sig, ok)
	}
	for name, b := range map[string][]byte{
		"empty":         nil,
		"no signatures": {0, 1, 2, 3},
		"short":         tx[:64],
		"bad count":     append([]byte{0x80, 0x00}, make([]byte, 64)...),
	} {
		if _, ok := FirstSignature(b); ok {
			t.Errorf("%s: FirstSignature accepted it", name)
		}
	}
}
