package txview

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"testing"

	"lukechampine.com/blake3"
)

// key returns a deterministic test keypair.
func key(i byte) ed25519.PrivateKey {
	var seed [32]byte
	seed[0], seed[31] = i, 0x5a
	return ed25519.NewKeyFromSeed(seed[:])
}

func addr(i byte) [KeySize]byte {
	var a [KeySize]byte
	a[0], a[1] = 0xa0, i
	return a
}

func mustSign(t testing.TB, m *Message, keys ...ed25519.PrivateKey) []byte {
	t.Helper()
	tx, err := m.Sign(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func mustParse(t testing.TB, b []byte) View {
	t.Helper()
	v, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func transferTx(t testing.TB) []byte {
	payer := key(1)
	m := Message{
		Payer:        PublicKey(payer),
		Blockhash:    addr(99),
		Instructions: []Ix{Transfer(PublicKey(payer), addr(2), 42)},
	}
	return mustSign(t, &m, payer)
}

func TestBuildAndParseTransfer(t *testing.T) {
	tx := transferTx(t)
	if len(tx) != 215 {
		t.Errorf("simple transfer is %d bytes, want 215", len(tx))
	}
	v := mustParse(t, tx)
	payer := PublicKey(key(1))
	if v.Version() != Legacy || v.NumSignatures() != 1 || v.NumStaticKeys() != 3 {
		t.Fatalf("%v %d %d", v.Version(), v.NumSignatures(), v.NumStaticKeys())
	}
	if *v.FeePayer() != payer || *v.StaticKey(1) != addr(2) || *v.StaticKey(2) != SystemProgram {
		t.Fatal("static keys out of order")
	}
	if v.Header() != (Header{1, 0, 1}) {
		t.Fatalf("header %+v", v.Header())
	}
	if *v.RecentBlockhash() != addr(99) {
		t.Fatal("blockhash")
	}
	if !ed25519.Verify(payer[:], v.Message(), v.Signature(0)[:]) {
		t.Fatal("signature does not verify over Message()")
	}
	it := v.Instructions()
	in, ok := it.Next()
	if !ok || in.ProgramIndex != 2 || string(in.Accounts) != "\x00\x01" || len(in.Data) != 12 {
		t.Fatalf("instruction %+v", in)
	}
	if binary.LittleEndian.Uint32(in.Data) != 2 || binary.LittleEndian.Uint64(in.Data[4:]) != 42 {
		t.Fatal("transfer data")
	}
	if _, ok := it.Next(); ok {
		t.Fatal("extra instruction")
	}
	for i, w := range []bool{true, true, false} {
		if v.IsWritable(i) != w {
			t.Errorf("IsWritable(%d) = %v", i, !w)
		}
		if v.IsSigner(i) != (i == 0) {
			t.Errorf("IsSigner(%d)", i)
		}
	}
	if v.NumWriteLocksRequested() != 2 || v.NumAccounts() != 3 {
		t.Errorf("write locks %d accounts %d", v.NumWriteLocksRequested(), v.NumAccounts())
	}
}

func TestBuildV0WithLookups(t *testing.T) {
	payer, other := key(1), key(2)
	table := LookupTable{Key: addr(50), Addresses: [][KeySize]byte{addr(60), addr(61), addr(62), addr(63)}}
	m := Message{
		Version:   V0,
		Payer:     PublicKey(payer),
		Blockhash: addr(99),
		Instructions: []Ix{
			SetComputeUnitPrice(1000),
			Transfer(PublicKey(payer), addr(61), 5), // writable from the table
			{Program: MemoProgram, Accounts: []AccountMeta{{Key: addr(63)}, {Key: PublicKey(other), Signer: true}}},
		},
		Tables: []LookupTable{table},
	}
	tx := mustSign(t, &m, other, payer)
	v := mustParse(t, tx)
	if v.Version() != V0 || v.NumSignatures() != 2 || v.NumLookups() != 1 {
		t.Fatalf("%v sigs %d lookups %d", v.Version(), v.NumSignatures(), v.NumLookups())
	}
	if v.NumLookupWritable() != 1 || v.NumLookupReadonly() != 1 {
		t.Fatalf("lookup w %d r %d", v.NumLookupWritable(), v.NumLookupReadonly())
	}
	lit := v.Lookups()
	l, _ := lit.Next()
	if *l.Table != addr(50) || string(l.Writable) != "\x01" || string(l.Readonly) != "\x03" {
		t.Fatalf("lookup %+v", l)
	}
	ns := v.NumStaticKeys()
	if !v.IsWritable(ns) || v.IsWritable(ns+1) || v.IsWritable(ns+2) {
		t.Error("IsWritable over looked-up accounts")
	}
	for i := 0; i < 2; i++ {
		pub := v.StaticKey(i)
		if !ed25519.Verify(pub[:], v.Message(), v.Signature(i)[:]) {
			t.Errorf("signature %d", i)
		}
	}
	if v.Message()[0] != 0x80 {
		t.Error("v0 message must start with the version prefix")
	}
}

func TestSignMissingKey(t *testing.T) {
	m := Message{Payer: PublicKey(key(1)), Instructions: []Ix{Memo([]byte("x"))}}
	if _, err := m.Sign(key(2)); !errors.Is(err, ErrMissingSigner) {
		t.Fatalf("err %v", err)
	}
	m.Tables = []LookupTable{{}}
	if _, err := m.Sign(key(1)); !errors.Is(err, ErrLegacyLookups) {
		t.Fatalf("err %v", err)
	}
}

// rawTx assembles a legacy transaction from parts, to break one rule at a
// time.
type rawTx struct {
	sigs      int
	header    [3]byte
	keys      int
	instrs    [][]byte // each: program, accounts..., as raw bytes (no data)
	numInstrs int      // when > 0, the instruction count written
}

func (r rawTx) bytes() []byte {
	b := []byte{byte(r.sigs)}
	b = append(b, make([]byte, r.sigs*64)...)
	b = append(b, r.header[:]...)
	b = append(b, byte(r.keys))
	for i := 0; i < r.keys; i++ {
		k := addr(byte(i))
		b = append(b, k[:]...)
	}
	b = append(b, make([]byte, 32)...)
	n := len(r.instrs)
	if r.numInstrs > 0 {
		n = r.numInstrs
	}
	b = AppendCompactU16(b, uint16(n))
	for _, in := range r.instrs {
		b = append(b, in[0])
		b = AppendCompactU16(b, uint16(len(in)-1))
		b = append(b, in[1:]...)
		b = append(b, 0) // no data
	}
	return b
}

func TestSanitizeRules(t *testing.T) {
	ok := rawTx{sigs: 1, header: [3]byte{1, 0, 1}, keys: 3, instrs: [][]byte{{2, 0, 1}}}
	if _, err := Parse(ok.bytes()); err != nil {
		t.Fatalf("baseline: %v", err)
	}
	many := make([][]byte, 65)
	for i := range many {
		many[i] = []byte{2}
	}
	cases := []struct {
		name string
		tx   rawTx
		want error
	}{
		{"sigs != required", rawTx{sigs: 1, header: [3]byte{2, 0, 0}, keys: 3}, ErrSignatureMismatch},
		{"keys < sigs", rawTx{sigs: 2, header: [3]byte{2, 0, 0}, keys: 1}, ErrTooFewStaticKeys},
		{"readonly unsigned overlaps", rawTx{sigs: 1, header: [3]byte{1, 0, 3}, keys: 3}, ErrReadonlyUnsigned},
		{"readonly fee payer", rawTx{sigs: 1, header: [3]byte{1, 1, 0}, keys: 3}, ErrNoWritableFeePayer},
		{"65 instructions", rawTx{sigs: 1, header: [3]byte{1, 0, 1}, keys: 3, instrs: many}, ErrTooManyInstructions},
		{"program out of range", rawTx{sigs: 1, header: [3]byte{1, 0, 1}, keys: 3, instrs: [][]byte{{3}}}, ErrProgramIndex},
		{"program is fee payer", rawTx{sigs: 1, header: [3]byte{1, 0, 1}, keys: 3, instrs: [][]byte{{0}}}, ErrProgramIsFeePayer},
		{"account out of range", rawTx{sigs: 1, header: [3]byte{1, 0, 1}, keys: 3, instrs: [][]byte{{2, 0, 3}}}, ErrAccountIndex},
		// Agave checks instructions in order: the first bad one decides.
		{"first failing instruction wins", rawTx{sigs: 1, header: [3]byte{1, 0, 1}, keys: 3, instrs: [][]byte{{1, 9}, {7}}}, ErrAccountIndex},
		{"zero signatures", rawTx{sigs: 0, header: [3]byte{0, 0, 0}, keys: 1}, ErrSignatureCount},
		{"13 signatures", rawTx{sigs: 13, header: [3]byte{13, 0, 0}, keys: 13}, ErrSignatureCount},
		{"39 keys", rawTx{sigs: 1, header: [3]byte{1, 0, 0}, keys: 39}, ErrStaticKeyCount},
		{"instruction count beyond the bytes", rawTx{sigs: 1, header: [3]byte{1, 0, 1}, keys: 3, numInstrs: 5}, ErrTruncated},
	}
	for _, c := range cases {
		_, err := Parse(c.tx.bytes())
		if err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestOversize(t *testing.T) {
	payer := key(1)
	m := Message{Payer: PublicKey(payer), Instructions: []Ix{Memo(make([]byte, 1000))}}
	msg, err := m.Compile()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := SignMessage(msg, payer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(tx); err != nil {
		t.Fatalf("%d bytes: %v", len(tx), err)
	}
	m.Instructions = []Ix{Memo(make([]byte, 1300))}
	if _, err := m.Sign(payer); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("builder: %v", err)
	}
	// A well-framed transaction over 1232 bytes fails sanitize.
	msg2, _ := (&Message{Payer: PublicKey(payer), Instructions: []Ix{Memo(make([]byte, 1100))}}).Compile()
	big := append([]byte{1}, make([]byte, 64)...)
	big = append(big, msg2...)
	if _, err := Parse(big); err != ErrOversize || !IsSanitize(err) {
		t.Fatalf("%d bytes: %v, want sanitize %v", len(big), err, ErrOversize)
	}
}

func TestComputeBudget(t *testing.T) {
	payer := key(1)
	pub := PublicKey(payer)
	build := func(ixs ...Ix) View {
		m := Message{Payer: pub, Instructions: ixs}
		return mustParse(t, mustSign(t, &m, payer))
	}
	cases := []struct {
		name    string
		ixs     []Ix
		want    ComputeBudget
		wantErr error
		errIdx  uint8
	}{
		{"none: one builtin", []Ix{Transfer(pub, addr(2), 1)},
			ComputeBudget{UnitLimit: 3000, HeapFrame: MinHeapFrame, LoadedAccountsDataSizeLimit: MaxLoadedAccountsDataSize}, nil, 0},
		{"memo is not a builtin", []Ix{Memo(nil), Transfer(pub, addr(2), 1)},
			ComputeBudget{UnitLimit: 203000, HeapFrame: MinHeapFrame, LoadedAccountsDataSizeLimit: MaxLoadedAccountsDataSize}, nil, 0},
		{"budget instructions count as builtins", []Ix{SetComputeUnitPrice(7), Memo(nil), Memo(nil)},
			ComputeBudget{UnitLimit: 403000, UnitPrice: 7, HeapFrame: MinHeapFrame, LoadedAccountsDataSizeLimit: MaxLoadedAccountsDataSize, NumBudgetInstructions: 1}, nil, 0},
		{"default capped", []Ix{Memo(nil), Memo(nil), Memo(nil), Memo(nil), Memo(nil), Memo(nil), Memo(nil), Memo(nil)},
			ComputeBudget{UnitLimit: MaxComputeUnitLimit, HeapFrame: MinHeapFrame, LoadedAccountsDataSizeLimit: MaxLoadedAccountsDataSize}, nil, 0},
		{"all set", []Ix{SetComputeUnitLimit(300), SetComputeUnitPrice(1 << 40), RequestHeapFrame(64 * 1024), SetLoadedAccountsDataSizeLimit(1 << 20)},
			ComputeBudget{UnitLimit: 300, UnitPrice: 1 << 40, HeapFrame: 64 * 1024, LoadedAccountsDataSizeLimit: 1 << 20, UnitLimitRequested: true, NumBudgetInstructions: 4}, nil, 0},
		{"limit clamped", []Ix{SetComputeUnitLimit(5_000_000)},
			ComputeBudget{UnitLimit: MaxComputeUnitLimit, HeapFrame: MinHeapFrame, LoadedAccountsDataSizeLimit: MaxLoadedAccountsDataSize, UnitLimitRequested: true, NumBudgetInstructions: 1}, nil, 0},
		{"loaded size clamped", []Ix{SetLoadedAccountsDataSizeLimit(1 << 30)},
			ComputeBudget{UnitLimit: 3000, HeapFrame: MinHeapFrame, LoadedAccountsDataSizeLimit: MaxLoadedAccountsDataSize, NumBudgetInstructions: 1}, nil, 0},
		{"duplicate", []Ix{SetComputeUnitLimit(1), Memo(nil), SetComputeUnitLimit(2)}, ComputeBudget{}, ErrDuplicateInstruction, 2},
		{"deprecated variant", []Ix{{Program: ComputeBudgetProgram, Data: []byte{0, 1, 2, 3, 4, 5, 6, 7, 8}}}, ComputeBudget{}, ErrInvalidInstructionData, 0},
		{"unknown tag", []Ix{Memo(nil), {Program: ComputeBudgetProgram, Data: []byte{5, 0, 0, 0, 0}}}, ComputeBudget{}, ErrInvalidInstructionData, 1},
		{"short data", []Ix{{Program: ComputeBudgetProgram, Data: []byte{3, 1, 0, 0, 0}}}, ComputeBudget{}, ErrInvalidInstructionData, 0},
		{"empty data", []Ix{{Program: ComputeBudgetProgram}}, ComputeBudget{}, ErrInvalidInstructionData, 0},
		{"heap not a multiple of 1024", []Ix{Memo(nil), RequestHeapFrame(40000)}, ComputeBudget{}, ErrInvalidInstructionData, 1},
		{"heap too big", []Ix{RequestHeapFrame(512 * 1024)}, ComputeBudget{}, ErrInvalidInstructionData, 0},
		{"loaded size zero", []Ix{SetLoadedAccountsDataSizeLimit(0)}, ComputeBudget{}, ErrInvalidLoadedAccountsDataSizeLimit, 0},
		// Trailing bytes after the value are ignored (borsh unchecked).
		{"trailing bytes", []Ix{{Program: ComputeBudgetProgram, Data: []byte{2, 10, 0, 0, 0, 0xff}}},
			ComputeBudget{UnitLimit: 10, HeapFrame: MinHeapFrame, LoadedAccountsDataSizeLimit: MaxLoadedAccountsDataSize, UnitLimitRequested: true, NumBudgetInstructions: 1}, nil, 0},
	}
	for _, c := range cases {
		got, err := build(c.ixs...).ComputeBudget()
		if c.wantErr != nil {
			var be *BudgetError
			if !errors.Is(err, c.wantErr) || !errors.As(err, &be) || be.Index != c.errIdx {
				t.Errorf("%s: err %v, want %v at %d", c.name, err, c.wantErr, c.errIdx)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v %v\n want %+v", c.name, got, err, c.want)
		}
	}
}

func TestPriorityFee(t *testing.T) {
	for _, c := range []struct {
		price uint64
		limit uint32
		want  uint64
	}{
		{0, 200000, 0},
		{1, 1, 1},         // ceil(1e-6)
		{1_000_000, 3, 3}, // exact
		{999_999, 1, 1},   // rounds up
		{1_000_001, 1, 2}, // rounds up
		{5000, 200_000, 1000},
		{^uint64(0), MaxComputeUnitLimit, ^uint64(0)}, // saturates
	} {
		if got := (ComputeBudget{UnitPrice: c.price, UnitLimit: c.limit}).PriorityFee(); got != c.want {
			t.Errorf("price %d limit %d: %d want %d", c.price, c.limit, got, c.want)
		}
	}
}

func TestSimpleVote(t *testing.T) {
	payer := key(1)
	pub := PublicKey(payer)
	vote := Ix{Program: VoteProgram, Accounts: []AccountMeta{{Key: addr(3), Writable: true}}, Data: []byte{1, 2, 3}}
	for _, c := range []struct {
		name string
		m    Message
		want bool
	}{
		{"vote", Message{Payer: pub, Instructions: []Ix{vote}}, true},
		{"vote + memo", Message{Payer: pub, Instructions: []Ix{vote, Memo(nil)}}, false},
		{"v0 vote", Message{Version: V0, Payer: pub, Instructions: []Ix{vote}}, false},
		{"transfer", Message{Payer: pub, Instructions: []Ix{Transfer(pub, addr(2), 1)}}, false},
	} {
		if got := mustParse(t, mustSign(t, &c.m, payer)).IsSimpleVote(); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	tx := transferTx(t)
	v := mustParse(t, tx)
	for name, f := range map[string]func(){
		"Parse":         func() { _, _ = Parse(tx) },
		"MessageHash":   func() { _ = v.MessageHash() },
		"ComputeBudget": func() { _, _ = v.ComputeBudget() },
		"Instructions": func() {
			it := v.Instructions()
			for _, ok := it.Next(); ok; _, ok = it.Next() {
			}
		},
		"Parse error": func() { _, _ = Parse(tx[:100]) },
	} {
		if a := testing.AllocsPerRun(200, f); a != 0 {
			t.Errorf("%s: %.1f allocations, want 0", name, a)
		}
	}
}

func TestHashMatchesBlake3(t *testing.T) {
	b := make([]byte, 2*1024)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	for n := 0; n <= len(b); n++ {
		if got, want := sum256TwoChunks(b[:n]), blake3.Sum256(b[:n]); got != want {
			t.Fatalf("length %d: %x want %x", n, got, want)
		}
	}
	long := make([]byte, PacketSize+5)
	if HashMessage(long) != blake3.Sum256(append([]byte(messageHashDomain), long...)) {
		t.Fatal("long message")
	}
}
