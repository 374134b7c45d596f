package txview

import (
	"crypto/ed25519"
	"math/rand/v2"
	"testing"

	solana "github.com/gagliardetto/solana-go"
)

// TestDifferentialSolanaGo builds many random transactions with solana-go
// (legacy and v0, several signers, lookup tables, compute budget) and
// checks that Parse reads every field solana-go put there.
func TestDifferentialSolanaGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 2000
	if testing.Short() {
		n = 300
	}
	var checked, v0, multi, withLookups int
	for i := 0; i < n; i++ {
		raw, tx, ok := randomSolanaGoTx(t, rng)
		if !ok {
			continue
		}
		checked++
		v, err := Parse(raw)
		if err != nil {
			t.Fatalf("tx %d: %v (%d bytes)", i, err, len(raw))
		}
		if compareWithSolanaGo(t, i, v, tx) && v.Version() == V0 {
			v0++
		}
		if v.NumSignatures() > 1 {
			multi++
		}
		if v.NumLookups() > 0 {
			withLookups++
		}
	}
	t.Logf("checked %d transactions: %d v0, %d multi-signature, %d with lookups (%d resolved)", checked, v0, multi, withLookups, resolvedWithLookups)
	if checked < n*3/4 || v0 == 0 || multi == 0 || withLookups == 0 {
		t.Fatalf("too little coverage: %d checked, %d v0, %d multi, %d lookups", checked, v0, multi, withLookups)
	}
}

func randomKey(rng *rand.Rand) solana.PrivateKey {
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rng.Uint32())
	}
	return solana.PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
}

func randomPub(rng *rand.Rand) solana.PublicKey {
	var p solana.PublicKey
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// randomSolanaGoTx returns a signed transaction made by solana-go, or
// false when the random shape does not fit in a packet.
func randomSolanaGoTx(t *testing.T, rng *rand.Rand) ([]byte, *solana.Transaction, bool) {
	signers := make([]solana.PrivateKey, 1+rng.IntN(4))
	for i := range signers {
		signers[i] = randomKey(rng)
	}
	pool := make([]solana.PublicKey, 2+rng.IntN(12))
	for i := range pool {
		pool[i] = randomPub(rng)
	}
	var ixs []solana.Instruction
	if rng.IntN(2) == 0 {
		ixs = append(ixs, solana.NewInstruction(solana.MustPublicKeyFromBase58("ComputeBudget111111111111111111111111111111"),
			nil, []byte{3, byte(rng.Uint32()), 0, 0, 0, 0, 0, 0, 0}))
	}
	if rng.IntN(2) == 0 {
		ixs = append(ixs, solana.NewInstruction(solana.MustPublicKeyFromBase58("ComputeBudget111111111111111111111111111111"),
			nil, []byte{2, 0x40, 0x0d, 0x03, 0}))
	}
	for k := rng.IntN(5); k >= 0; k-- {
		var metas solana.AccountMetaSlice
		for a := rng.IntN(5); a > 0; a-- {
			if rng.IntN(3) == 0 {
				s := signers[rng.IntN(len(signers))]
				metas = append(metas, solana.NewAccountMeta(s.PublicKey(), rng.IntN(2) == 0, true))
			} else {
				metas = append(metas, solana.NewAccountMeta(pool[rng.IntN(len(pool))], rng.IntN(2) == 0, false))
			}
		}
		data := make([]byte, rng.IntN(40))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		prog := pool[rng.IntN(2)] // programs from the first two pool keys
		ixs = append(ixs, solana.NewInstruction(prog, metas, data))
	}
	// Every signer must appear: make sure each is used.
	for _, s := range signers[1:] {
		ixs = append(ixs, solana.NewInstruction(pool[0], solana.AccountMetaSlice{solana.NewAccountMeta(s.PublicKey(), false, true)}, nil))
	}
	opts := []solana.TransactionOption{solana.TransactionPayer(signers[0].PublicKey())}
	if rng.IntN(2) == 0 { // v0 with lookup tables
		tables := map[solana.PublicKey]solana.PublicKeySlice{}
		for k := 1 + rng.IntN(3); k > 0; k-- {
			var content solana.PublicKeySlice
			for _, p := range pool[2:] {
				if rng.IntN(2) == 0 {
					content = append(content, p)
				}
			}
			content = append(content, randomPub(rng))
			tables[randomPub(rng)] = content
		}
		opts = append(opts, solana.TransactionAddressTables(tables))
		lastTables = tables
	} else {
		lastTables = nil
	}
	tx, err := solana.NewTransaction(ixs, solana.Hash(randomPub(rng)), opts...)
	if err != nil {
		t.Fatalf("solana-go NewTransaction: %v", err)
	}
	if _, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
		for i := range signers {
			if signers[i].PublicKey() == k {
				return &signers[i]
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("solana-go Sign: %v", err)
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatalf("solana-go MarshalBinary: %v", err)
	}
	if len(raw) > PacketSize {
		return nil, nil, false
	}
	return raw, tx, true
}

// lastTables are the lookup tables of the last random v0 transaction.
var lastTables map[solana.PublicKey]solana.PublicKeySlice

// resolvedWithLookups counts messages whose looked-up writability was
// compared too.
var resolvedWithLookups int

func compareWithSolanaGo(t *testing.T, i int, v View, tx *solana.Transaction) bool {
	t.Helper()
	m := &tx.Message
	fail := func(what string, got, want any) bool {
		t.Errorf("tx %d: %s = %v, solana-go %v", i, what, got, want)
		return false
	}
	if (v.Version() == V0) != m.IsVersioned() {
		return fail("version", v.Version(), m.IsVersioned())
	}
	h := m.Header
	if v.Header() != (Header{h.NumRequiredSignatures, h.NumReadonlySignedAccounts, h.NumReadonlyUnsignedAccounts}) {
		return fail("header", v.Header(), h)
	}
	if v.NumSignatures() != len(tx.Signatures) {
		return fail("signatures", v.NumSignatures(), len(tx.Signatures))
	}
	for s := range tx.Signatures {
		if *v.Signature(s) != [64]byte(tx.Signatures[s]) {
			return fail("signature", s, "differs")
		}
		pub := v.StaticKey(s)
		if !ed25519.Verify(pub[:], v.Message(), v.Signature(s)[:]) {
			return fail("signature verifies over Message()", false, true)
		}
	}
	// A resolved solana-go message appends the looked-up keys to
	// AccountKeys.
	static := v.NumStaticKeys()
	if len(m.AccountKeys) != static {
		return fail("account keys", v.NumAccounts(), len(m.AccountKeys))
	}
	for k := range static {
		if *v.StaticKey(k) != [32]byte(m.AccountKeys[k]) {
			return fail("static key", k, "differs")
		}
	}
	if *v.RecentBlockhash() != [32]byte(m.RecentBlockhash) {
		return fail("blockhash", "", "differs")
	}
	msg, err := m.MarshalBinary()
	if err != nil || string(msg) != string(v.Message()) {
		return fail("message bytes", len(v.Message()), len(msg))
	}
	if v.MessageHash() != HashMessage(msg) {
		return fail("message hash", "", "differs")
	}
	it := v.Instructions()
	for k, ci := range m.Instructions {
		in, ok := it.Next()
		if !ok {
			return fail("instruction count", k, len(m.Instructions))
		}
		if uint16(in.ProgramIndex) != ci.ProgramIDIndex || string(in.Data) != string(ci.Data) || len(in.Accounts) != len(ci.Accounts) {
			return fail("instruction", k, "differs")
		}
		for a := range ci.Accounts {
			if uint16(in.Accounts[a]) != ci.Accounts[a] {
				return fail("instruction account", a, "differs")
			}
		}
	}
	if _, more := it.Next(); more {
		return fail("instruction count", v.NumInstructions(), len(m.Instructions))
	}
	lit := v.Lookups()
	for k, l := range m.AddressTableLookups {
		got, ok := lit.Next()
		if !ok {
			return fail("lookup count", k, len(m.AddressTableLookups))
		}
		if *got.Table != [32]byte(l.AccountKey) || string(got.Writable) != string(l.WritableIndexes) || string(got.Readonly) != string(l.ReadonlyIndexes) {
			return fail("lookup", k, "differs")
		}
	}
	if _, more := lit.Next(); more {
		return fail("lookup count", v.NumLookups(), len(m.AddressTableLookups))
	}
	// solana-go's own decoder reads the same bytes back to the same message.
	back, err := solana.TransactionFromBytes(v.Bytes())
	if err != nil {
		return fail("solana-go decode", err, nil)
	}
	if msg2, _ := back.Message.MarshalBinary(); string(msg2) != string(msg) {
		return fail("solana-go round trip", "", "differs")
	}
	// Resolve the decoded copy's lookups so that solana-go can say which
	// looked-up accounts are writable.
	if lastTables != nil {
		m = &back.Message
		if err := m.SetAddressTables(lastTables); err != nil {
			return fail("solana-go SetAddressTables", err, nil)
		}
		if err := m.ResolveLookups(); err != nil {
			return fail("solana-go ResolveLookups", err, nil)
		}
	}
	resolved := len(m.AccountKeys) == v.NumAccounts()
	if resolved && v.NumLookups() > 0 {
		resolvedWithLookups++
	}
	for k, key := range m.AccountKeys {
		want := m.IsWritableStatic(key)
		if resolved {
			if want, err = m.IsWritable(key); err != nil {
				return fail("solana-go IsWritable", err, nil)
			}
		}
		if v.IsWritable(k) != want {
			return fail("IsWritable", k, want)
		}
		if v.IsSigner(k) != m.IsSigner(key) {
			return fail("IsSigner", k, m.IsSigner(key))
		}
	}
	return true
}
