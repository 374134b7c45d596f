package scheduler

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestPrecompileExecution runs precompile transactions through the
// scheduler: valid ones succeed and consume no compute units, a failed
// one is committed with InstructionError(i, Custom(code)) and pays its
// fee, precompile signatures included.
func TestPrecompileExecution(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	for _, k := range []banking.Pubkey{banking.Ed25519Program, banking.Secp256k1Program, banking.Secp256r1Program} {
		if a, ok := b.Account(k); !ok || !a.Executable || a.Owner != banking.NativeLoader {
			t.Fatalf("%s: genesis account %+v, %v", base58.Encode(k[:]), a, ok)
		}
	}
	s := newScheduler(t, Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	start := lamports(b, banktest.Pub(0))

	signer := banktest.FreshKey(50)
	k1 := banktest.K1Key("k1")
	r1, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r1Sig, r1Pub := banktest.P256Sign(t, r1, []byte("r1"), true)
	badEd := banktest.Ed25519Ix(signer, []byte("x"))
	badEd.Data[len(badEd.Data)-1] ^= 1

	cases := []struct {
		name   string
		payer  int
		ixs    []txview.Ix
		err    string
		sigs   uint64 // signatures paid for
		amount uint64 // transferred to banktest.Pub(1)
	}{
		{"ed25519, then a transfer", 0, []txview.Ix{banktest.Ed25519Ix(signer, []byte("m1"), []byte("m2")), txview.Transfer(banktest.Pub(0), banktest.Pub(1), 10)}, "ok", 3, 10},
		// Transfer 150 + compute budget 150: the precompile uses nothing.
		{"ed25519 within a 300-unit limit", 2, []txview.Ix{txview.SetComputeUnitLimit(300), banktest.Ed25519Ix(signer, []byte("m")), txview.Transfer(banktest.Pub(2), banktest.Pub(1), 10)}, "ok", 2, 10},
		{"bad ed25519 signature", 3, []txview.Ix{txview.Transfer(banktest.Pub(3), banktest.Pub(1), 10), badEd}, "InstructionError(1, Custom(2))", 2, 0},
		{"ed25519 with no data", 4, []txview.Ix{banktest.PrecompileIx(banking.Ed25519Program, nil)}, "InstructionError(0, Custom(4))", 1, 0},
		{"secp256k1", 5, []txview.Ix{banktest.PrecompileIx(banking.Secp256k1Program, banktest.SecpData(0, banktest.EthAddress(k1), banktest.SecpSign(k1, []byte("k")), []byte("k")))}, "ok", 2, 0},
		{"secp256r1", 6, []txview.Ix{banktest.PrecompileIx(banking.Secp256r1Program, banktest.SigVerifyData([][]byte{r1Pub}, [][]byte{r1Sig}, [][]byte{[]byte("r1")}))}, "ok", 2, 0},
		{"secp256r1, none", 7, []txview.Ix{banktest.PrecompileIx(banking.Secp256r1Program, []byte{0, 0})}, "InstructionError(0, Custom(4))", 1, 0},
	}
	var txs [][]byte
	for _, c := range cases {
		txs = append(txs, banktest.SignTx(t, bh, banktest.Key(c.payer), c.ixs))
	}
	s.Submit(banktest.BatchOf(t, pool, txs...))
	drain(t, s)
	checkAccounting(t, s)
	received := uint64(0)
	for i, c := range cases {
		v, _ := txview.Parse(txs[i])
		st, ok := b.Status(bh, v.Signature(0))
		if !ok {
			t.Errorf("%s: no status", c.name)
			continue
		}
		if got := st.Err.String(); got != c.err {
			t.Errorf("%s: %s, want %s", c.name, got, c.err)
		}
		if got, want := lamports(b, banktest.Pub(c.payer)), start-5000*c.sigs-c.amount; got != want {
			t.Errorf("%s: payer has %d, want %d (fee %d)", c.name, got, want, 5000*c.sigs)
		}
		received += c.amount
	}
	if got := lamports(b, banktest.Pub(1)); got != start+received {
		t.Errorf("account 1: %d, want %d", got, start+received)
	}
}
