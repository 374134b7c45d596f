package sigverify

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/tpugo/tpu/txview"
)

// cryptoEd25519 is plain crypto/ed25519.Verify, without the checks of
// verify_strict: the in-process peer the backends are compared with. It
// accepts small-order keys, so it is not a Backend NewBackend offers.
type cryptoEd25519 struct{}

func (cryptoEd25519) Name() string { return "crypto-ed25519" }

func (cryptoEd25519) Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool {
	return ed25519.Verify(pubkey[:], msg, sig[:])
}

// BenchmarkVerify verifies the one signature of a simple transfer per op,
// with each backend and with crypto-ed25519 as the peer.
func BenchmarkVerify(b *testing.B) {
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	to := txview.PublicKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize)))
	m := txview.Message{
		Payer:        txview.PublicKey(k),
		Blockhash:    [32]byte{3, 3, 3},
		Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(k), to, 1)},
	}
	tx, err := m.Sign(k)
	if err != nil {
		b.Fatal(err)
	}
	v, err := txview.Parse(tx)
	if err != nil {
		b.Fatal(err)
	}
	pub, sig, msg := v.StaticKey(0), v.Signature(0), v.Message()

	impls := []Backend{cryptoEd25519{}}
	for _, name := range BackendNames() {
		impls = append(impls, mustBackend(b, name))
	}
	for _, impl := range impls {
		b.Run("backend="+impl.Name(), func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if !impl.Verify(pub, msg, sig) {
					b.Fatal("signature rejected")
				}
			}
		})
	}
}
