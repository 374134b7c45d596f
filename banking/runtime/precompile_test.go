package runtime

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/ed25519strict"
	"github.com/tpugo/tpu/txview"
)

func TestPrecompileAddresses(t *testing.T) {
	for _, c := range []struct {
		key  banking.Pubkey
		want string
	}{
		{banking.Ed25519Program, "Ed25519SigVerify111111111111111111111111111"},
		{banking.Secp256k1Program, "KeccakSecp256k11111111111111111111111111111"},
		{banking.Secp256r1Program, "Secp256r1SigVerify1111111111111111111111111"},
	} {
		if got := base58.Encode(c.key[:]); got != c.want {
			t.Errorf("%s: is %s", c.want, got)
		}
	}
}

func errCode(err error) string {
	if err == nil {
		return "ok"
	}
	var pe PrecompileError
	if !errors.As(err, &pe) {
		return "not a PrecompileError: " + err.Error()
	}
	return precompileErrorNames[pe]
}

func TestVerifyEd25519(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	pub := []byte(priv.Public().(ed25519.PublicKey))
	msg := []byte("hello")
	sig := ed25519.Sign(priv, msg)
	valid := banktest.SigVerifyData([][]byte{pub}, [][]byte{sig}, [][]byte{msg})
	msg2 := []byte("IBRL")
	two := banktest.SigVerifyData([][]byte{pub, pub}, [][]byte{sig, ed25519.Sign(priv, msg2)}, [][]byte{msg, msg2})

	// Parts in instruction 1: key at 0, signature at 32, message at 96.
	other := append(append(append([]byte{}, pub...), sig...), msg...)
	elsewhere, _ := banktest.EdTable(1, banktest.EdEntry{SigOff: 32, SigIx: 1, KeyOff: 0, KeyIx: 1, MsgOff: 96, MsgSize: uint16(len(msg)), MsgIx: 1})

	mutate := func(b []byte, i int, f func(byte) byte) []byte {
		c := append([]byte{}, b...)
		c[i] = f(c[i])
		return c
	}
	sigAt := int(binary.LittleEndian.Uint16(valid[2:]))
	keyAt := int(binary.LittleEndian.Uint16(valid[6:]))
	// S + L: the same signature mod L, refused by verify_strict.
	sPlusL := append([]byte{}, valid...)
	var carry uint16
	l := [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 31: 0x10}
	for i := range 32 {
		v := uint16(sPlusL[sigAt+32+i]) + uint16(l[i]) + carry
		sPlusL[sigAt+32+i], carry = byte(v), v>>8
	}
	// A key that does not decode: y = 2 is not on the curve.
	badKey := append([]byte{}, valid...)
	copy(badKey[keyAt:], append([]byte{2}, make([]byte, 31)...))

	for _, c := range []struct {
		name  string
		data  []byte
		datas [][]byte // nil: the instruction alone
		want  string
	}{
		{"valid", valid, nil, "ok"},
		{"two signatures", two, nil, "ok"},
		{"parts in another instruction", elsewhere, [][]byte{elsewhere, other}, "ok"},
		{"no signatures", []byte{0, 0}, nil, "ok"},
		{"empty", nil, nil, "InvalidInstructionDataSize"},
		{"one byte", []byte{1}, nil, "InvalidInstructionDataSize"},
		{"no signatures, more data", []byte{0, 0, 0}, nil, "InvalidInstructionDataSize"},
		{"table cut short", valid[:offsetsStart+offsetsSize-1], nil, "InvalidInstructionDataSize"},
		{"padding byte ignored", mutate(valid, 1, func(b byte) byte { return b + 7 }), nil, "ok"},
		{"changed message", mutate(valid, len(valid)-1, func(b byte) byte { return b ^ 1 }), nil, "InvalidSignature"},
		{"changed signature", mutate(valid, sigAt, func(b byte) byte { return b ^ 1 }), nil, "InvalidSignature"},
		{"S + L", sPlusL, nil, "InvalidSignature"},
		{"key does not decode", badKey, nil, "InvalidPublicKey"},
	} {
		datas := c.datas
		if datas == nil {
			datas = [][]byte{c.data}
		}
		if got := errCode(verifyEd25519(c.data, datas)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}

	// Agave ed25519.rs tests: offsets over a 100-byte instruction 1.
	for _, c := range []struct {
		name string
		e    banktest.EdEntry
		want string
	}{
		{"signature instruction 2", banktest.EdEntry{SigIx: 2, KeyIx: 1, MsgIx: 1}, "InvalidDataOffsets"},
		{"key instruction 2", banktest.EdEntry{SigIx: 1, KeyIx: 2, MsgIx: 1}, "InvalidDataOffsets"},
		{"message instruction 2", banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 2}, "InvalidDataOffsets"},
		// Zeros: the key (y = 0) decodes to a point of order 4, which
		// verify_strict refuses.
		{"message at 99, 1 byte", banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 1, MsgOff: 99, MsgSize: 1}, "InvalidSignature"},
		{"message at 100, 1 byte", banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 1, MsgOff: 100, MsgSize: 1}, "InvalidDataOffsets"},
		{"message at 100, 1000 bytes", banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 1, MsgOff: 100, MsgSize: 1000}, "InvalidDataOffsets"},
		{"message at 65535, 65535 bytes", banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 1, MsgOff: 0xffff, MsgSize: 0xffff}, "InvalidDataOffsets"},
		{"key at 65535", banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 1, KeyOff: 0xffff}, "InvalidDataOffsets"},
		{"key at 69", banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 1, KeyOff: 100 - 32 + 1}, "InvalidDataOffsets"},
		{"signature at 65535", banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 1, SigOff: 0xffff}, "InvalidDataOffsets"},
		{"signature at 37", banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 1, SigOff: 100 - 64 + 1}, "InvalidDataOffsets"},
		// Index 0 is the instruction itself, 16 bytes long.
		{"signature past this instruction", banktest.EdEntry{SigIx: 0, KeyIx: 1, MsgIx: 1}, "InvalidDataOffsets"},
	} {
		data, datas := banktest.EdTable(1, c.e)
		if got := errCode(verifyEd25519(data, datas)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestVerifySecp256k1(t *testing.T) {
	key := banktest.K1Key("secp256k1 test key")
	msg := []byte("hello")
	sig := banktest.SecpSign(key, msg)
	eth := banktest.EthAddress(key)
	valid := banktest.SecpData(0, eth, sig, msg)

	// The other signature of the same message: N - s, recovery id ^ 1
	// (Agave's test_malleability: accepted).
	var s secp256k1.ModNScalar
	s.SetByteSlice(sig[32:64])
	s.Negate()
	high := append([]byte{}, sig...)
	sb := s.Bytes()
	copy(high[32:64], sb[:])
	high[64] ^= 1

	set := func(at int, b ...byte) []byte {
		c := append([]byte{}, valid...)
		copy(c[at:], b)
		return c
	}
	const ethAt, sigAt = 12, 32
	msgAt := sigAt + 65
	n := secp256k1.Params().N.Bytes()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"valid", valid, "ok"},
		{"high s", banktest.SecpData(0, eth, high, msg), "ok"},
		{"trailing bytes", append(append([]byte{}, valid...), "unreferenced"...), "ok"},
		{"no signatures", []byte{0}, "ok"},
		{"empty", nil, "InvalidInstructionDataSize"},
		{"no signatures, more data", []byte{0, 0}, "InvalidInstructionDataSize"},
		{"table cut short", valid[:secp256k1OffsetsSize], "InvalidInstructionDataSize"},
		{"changed message", set(msgAt, 'j'), "InvalidSignature"},
		{"other eth address", set(ethAt, eth[0]^1), "InvalidSignature"},
		{"recovery id 4", set(sigAt+64, 4), "InvalidRecoveryId"},
		{"r = N", set(sigAt, n...), "InvalidSignature"},
		{"r = 0", set(sigAt, make([]byte, 32)...), "InvalidSignature"},
		{"signature instruction 1", set(3, 1), "InvalidInstructionDataSize"},
		{"eth instruction 1", set(6, 1), "InvalidDataOffsets"},
		{"message instruction 1", set(11, 1), "InvalidDataOffsets"},
		{"recovery id past the end", banktest.SecpData(0, eth, sig[:64], nil), "InvalidSignature"},
		{"eth address past the end", set(4, 0xff, 0xff), "InvalidSignature"},
		{"message past the end", set(7, 0xff, 0xff), "InvalidSignature"},
	} {
		if got := errCode(verifySecp256k1(c.data, [][]byte{c.data})); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// Agave secp256k1.rs test_case: zeros in a 100-byte instruction 1.
	other := make([]byte, 100)
	for _, c := range []struct {
		name             string
		sigIx, ethIx, mx byte
		msgOff, msgSize  uint16
		sigOff, ethOff   uint16
		want             string
	}{
		{"signature instruction 2", 2, 1, 1, 0, 0, 0, 0, "InvalidInstructionDataSize"},
		{"eth instruction 2", 1, 2, 1, 0, 0, 0, 0, "InvalidDataOffsets"},
		{"message instruction 2", 1, 1, 2, 0, 0, 0, 0, "InvalidDataOffsets"},
		{"zeros (r = 0)", 1, 1, 1, 99, 1, 0, 0, "InvalidSignature"},
		{"message at 100, 1000 bytes", 1, 1, 1, 100, 1000, 0, 0, "InvalidSignature"},
		{"signature at 36", 1, 1, 1, 0, 0, 100 - 64, 0, "InvalidSignature"},
		{"eth at 81", 1, 1, 1, 0, 0, 0, 100 - 20 + 1, "InvalidSignature"},
	} {
		data := make([]byte, 1+secp256k1OffsetsSize)
		data[0] = 1
		b := data[1:]
		binary.LittleEndian.PutUint16(b, c.sigOff)
		b[2] = c.sigIx
		binary.LittleEndian.PutUint16(b[3:], c.ethOff)
		b[5] = c.ethIx
		binary.LittleEndian.PutUint16(b[6:], c.msgOff)
		binary.LittleEndian.PutUint16(b[8:], c.msgSize)
		b[10] = c.mx
		if got := errCode(verifySecp256k1(data, [][]byte{data, other})); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestVerifySecp256r1(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("hello")
	sig, pub := banktest.P256Sign(t, key, msg, true)
	highSig, _ := banktest.P256Sign(t, key, msg, false)
	valid := banktest.SigVerifyData([][]byte{pub}, [][]byte{sig}, [][]byte{msg})
	sigAt := int(binary.LittleEndian.Uint16(valid[2:]))
	keyAt := int(binary.LittleEndian.Uint16(valid[6:]))
	set := func(at int, b ...byte) []byte {
		c := append([]byte{}, valid...)
		copy(c[at:], b)
		return c
	}
	nine := make([]byte, offsetsStart+9*offsetsSize)
	nine[0] = 9
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"valid", valid, "ok"},
		{"high s", banktest.SigVerifyData([][]byte{pub}, [][]byte{highSig}, [][]byte{msg}), "InvalidSignature"},
		{"no signatures", []byte{0, 0}, "InvalidInstructionDataSize"},
		{"nine signatures", nine, "InvalidInstructionDataSize"},
		{"one byte", []byte{1}, "InvalidInstructionDataSize"},
		{"table cut short", valid[:offsetsStart+offsetsSize-1], "InvalidInstructionDataSize"},
		{"changed message", set(len(valid)-1, 'p'), "InvalidSignature"},
		{"r = 0", set(sigAt, make([]byte, 32)...), "InvalidSignature"},
		{"s = 0", set(sigAt+32, make([]byte, 32)...), "InvalidSignature"},
		{"key prefix 5", set(keyAt, 5), "InvalidPublicKey"},
		{"key instruction 1", set(2+6, 1, 0), "InvalidDataOffsets"},
		{"message past the end", set(2+8, 0xff, 0xff), "InvalidDataOffsets"},
	} {
		if got := errCode(verifySecp256r1(c.data, [][]byte{c.data})); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestPrecompileFeeAndCost: the signature fee and the cost model count
// each precompile instruction's declared signatures (its first data
// byte), valid or not.
func TestPrecompileFeeAndCost(t *testing.T) {
	bh := banking.Pubkey{1}
	payer := banktest.Key(0)
	k1 := banktest.K1Key("k1")
	ixs := []txview.Ix{
		banktest.Ed25519Ix(payer, []byte("a"), []byte("b")),
		banktest.PrecompileIx(banking.Secp256k1Program, banktest.SecpData(1, banktest.EthAddress(k1), banktest.SecpSign(k1, []byte("c")), []byte("c"))),
		banktest.PrecompileIx(banking.Secp256r1Program, []byte{3}), // declares 3; fails when run
		banktest.PrecompileIx(banking.Ed25519Program, nil),         // declares 0
		txview.Transfer(banktest.Pub(0), banktest.Pub(1), 1),
	}
	v, err := txview.Parse(banktest.SignTx(t, bh, payer, ixs))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := FeeOf(v, cb).Signature, uint64(5000*(1+2+1+3)); got != want {
		t.Errorf("signature fee %d, want %d", got, want)
	}
	if got, want := CostOf(v, cb).Signature, uint64(720+2*2400+6690+3*4800); got != want {
		t.Errorf("signature cost %d, want %d", got, want)
	}
	// Default limit: ed25519 and secp256k1 are builtins (3,000 each),
	// secp256r1 is not (200,000), as builtins-default-costs has it.
	if got, want := cb.UnitLimit, uint32(3000+3000+200_000+3000+3000); got != want {
		t.Errorf("default unit limit %d, want %d", got, want)
	}
}

// FuzzPrecompile feeds instruction data from the network to the three
// verify functions: they never panic, read only inside their inputs
// (bounds checks would say), give the same answer twice, and the
// ed25519 parser agrees with refEd25519.
func FuzzPrecompile(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	f.Add(banktest.Ed25519Ix(priv, []byte("hello")).Data, []byte{})
	k1 := banktest.K1Key("k1")
	f.Add(banktest.SecpData(0, banktest.EthAddress(k1), banktest.SecpSign(k1, []byte("c")), []byte("c")), []byte{})
	data, datas := banktest.EdTable(1, banktest.EdEntry{SigIx: 1, KeyIx: 1, MsgIx: 1, MsgOff: 99, MsgSize: 1})
	f.Add(data, datas[1])
	f.Add([]byte{8, 0, 0xff, 0xff, 0xff, 0xff}, []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data, other []byte) {
		datas := [][]byte{data, other}
		if got, want := verifyEd25519(data, datas), refEd25519(data, datas); got != want {
			t.Fatalf("verifyEd25519 %v, the reference %v", got, want)
		}
		for _, v := range []func([]byte, [][]byte) error{verifyEd25519, verifySecp256k1, verifySecp256r1} {
			e1 := v(data, datas)
			if e1 != nil {
				if _, ok := e1.(PrecompileError); !ok {
					t.Fatalf("error %v is not a PrecompileError", e1)
				}
			}
			if e2 := v(data, datas); e1 != e2 {
				t.Fatalf("%v then %v", e1, e2)
			}
		}
	})
}

// BenchmarkSignatureCount is what counting precompile signatures adds to
// admission per transaction (FeeOf and the cost model each count once):
// one pass over the instructions, a byte compared per instruction.
func BenchmarkSignatureCount(b *testing.B) {
	bh := banking.Pubkey{1}
	for _, c := range []struct {
		name string
		ixs  []txview.Ix
	}{
		{"transfer", []txview.Ix{txview.Transfer(banktest.Pub(0), banktest.Pub(1), 1), txview.SetComputeUnitPrice(1), txview.SetComputeUnitLimit(1470)}},
		{"ed25519", []txview.Ix{banktest.Ed25519Ix(banktest.Key(0), []byte("m")), txview.Transfer(banktest.Pub(0), banktest.Pub(1), 1)}},
	} {
		b.Run("case="+c.name, func(b *testing.B) {
			tx := banktest.SignTx(b, bh, banktest.Key(0), c.ixs)
			v, err := txview.Parse(tx)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(tx)))
			b.ReportAllocs()
			var sink uint64
			for b.Loop() {
				sink += signatureCount(v) + signatureCost(v)
			}
			if sink == 0 {
				b.Fatal("nothing counted")
			}
		})
	}
}

// TestPrecompileAllocs: counting precompile signatures and checking an
// ed25519 precompile instruction allocate nothing (secp256k1 and
// secp256r1 allocate in their libraries).
func TestPrecompileAllocs(t *testing.T) {
	tx := banktest.SignTx(t, banking.Pubkey{1}, banktest.Key(0), []txview.Ix{banktest.Ed25519Ix(banktest.Key(1), []byte("m")), txview.Transfer(banktest.Pub(0), banktest.Pub(1), 1)})
	v, err := txview.Parse(tx)
	if err != nil {
		t.Fatal(err)
	}
	it := v.Instructions()
	in, _ := it.Next()
	etx := &Tx{View: v}
	n := testing.AllocsPerRun(20, func() {
		if signatureCount(v) != 2 || signatureCost(v) != SignatureCost+Ed25519VerifyCost {
			t.Fatal("wrong count")
		}
		if _, e := precompileInstruction(etx, 0, in, &banking.Ed25519Program); e.IsErr() {
			t.Fatal(e)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// BenchmarkVerifyPrecompile is one signature's check per op, by program.
func BenchmarkVerifyPrecompile(b *testing.B) {
	k1 := banktest.K1Key("k1")
	r1, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	r1Sig, r1Pub := banktest.P256Sign(b, r1, []byte("m"), true)
	for _, c := range []struct {
		name string
		prog banking.Pubkey
		data []byte
	}{
		{"ed25519", banking.Ed25519Program, banktest.Ed25519Ix(banktest.Key(0), []byte("m")).Data},
		{"secp256k1", banking.Secp256k1Program, banktest.SecpData(0, banktest.EthAddress(k1), banktest.SecpSign(k1, []byte("m")), []byte("m"))},
		{"secp256r1", banking.Secp256r1Program, banktest.SigVerifyData([][]byte{r1Pub}, [][]byte{r1Sig}, [][]byte{[]byte("m")})},
	} {
		b.Run("program="+c.name, func(b *testing.B) {
			datas := [][]byte{c.data}
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := verifyPrecompile(&c.prog, c.data, datas); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// refEd25519 is a slow second reading of Agave's ed25519.rs verify for
// FuzzPrecompile, written apart from verifyEd25519: the table decoded
// with encoding/binary into a struct, offsets in 64-bit arithmetic. The
// signature checks themselves are ed25519strict's, as there.
func refEd25519(data []byte, datas [][]byte) error {
	if len(data) < 2 {
		return PrecompileInvalidInstructionDataSize
	}
	count := uint64(data[0])
	if count == 0 && len(data) != 2 {
		return PrecompileInvalidInstructionDataSize
	}
	if uint64(len(data)) < 2+14*count {
		return PrecompileInvalidInstructionDataSize
	}
	table := make([]struct{ SigOff, SigIx, KeyOff, KeyIx, MsgOff, MsgSize, MsgIx uint16 }, count)
	if err := binary.Read(bytes.NewReader(data[2:2+14*count]), binary.LittleEndian, table); err != nil {
		panic(err)
	}
	part := func(ix, off uint16, size uint64) ([]byte, bool) {
		src := data
		if ix != 0xffff {
			if uint64(ix) >= uint64(len(datas)) {
				return nil, false
			}
			src = datas[ix]
		}
		if uint64(off)+size > uint64(len(src)) {
			return nil, false
		}
		return src[off : uint64(off)+size], true
	}
	for _, e := range table {
		sig, ok := part(e.SigIx, e.SigOff, 64)
		if !ok {
			return PrecompileInvalidDataOffsets
		}
		key, ok := part(e.KeyIx, e.KeyOff, 32)
		if !ok {
			return PrecompileInvalidDataOffsets
		}
		if !ed25519strict.ValidPublicKey((*[32]byte)(key)) {
			return PrecompileInvalidPublicKey
		}
		msg, ok := part(e.MsgIx, e.MsgOff, uint64(e.MsgSize))
		if !ok {
			return PrecompileInvalidDataOffsets
		}
		if !ed25519strict.Verify((*[32]byte)(key), msg, (*[64]byte)(sig)) {
			return PrecompileInvalidSignature
		}
	}
	return nil
}

// TestExecuteAllocs: executing a transfer allocates nothing. The scratch
// balances once escaped to the heap because the lookup table program
// took execute's state by pointer: one allocation per transaction.
func TestExecuteAllocs(t *testing.T) {
	tx := banktest.SignTx(t, banking.Pubkey{1}, banktest.Key(0), []txview.Ix{txview.Transfer(banktest.Pub(0), banktest.Pub(1), 1)})
	v, err := txview.Parse(tx)
	if err != nil {
		t.Fatal(err)
	}
	payer := bank.New(banktest.Pub(0), bank.Account{Lamports: 1 << 40, Owner: banking.SystemProgram})
	to := bank.New(banktest.Pub(1), bank.Account{Lamports: 1 << 40, Owner: banking.SystemProgram})
	sys := bank.New(banking.SystemProgram, bank.Account{Lamports: bank.RentExemptMinimum(0), Owner: banking.NativeLoader, Executable: true})
	cb, _ := v.ComputeBudget()
	etx := &Tx{View: v, Accounts: []*bank.Account{payer, to, sys}, Writable: 0b011, Fee: FeeOf(v, cb), Budget: cb}
	n := testing.AllocsPerRun(100, func() {
		if r := Execute(etx); r.Dropped || r.Err.IsErr() {
			t.Fatalf("transfer: dropped %v, err %v", r.Dropped, r.Err)
		}
	})
	if n != 0 {
		t.Errorf("execute allocated %v times per transfer", n)
	}
}
