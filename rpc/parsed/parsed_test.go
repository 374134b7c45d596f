package parsed_test

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/rpc/parsed"
	"github.com/tpugo/tpu/txview"
)

// bincode builds instruction data as Agave's bincode writes it.
type bincode []byte

func (b bincode) u32(v uint32) bincode         { return binary.LittleEndian.AppendUint32(b, v) }
func (b bincode) u64(v uint64) bincode         { return binary.LittleEndian.AppendUint64(b, v) }
func (b bincode) key(k banking.Pubkey) bincode { return append(b, k[:]...) }
func (b bincode) str(s string) bincode         { return append(b.u64(uint64(len(s))), s...) }

func key(i byte) banking.Pubkey {
	var k banking.Pubkey
	for j := range k {
		k[j] = i
	}
	return k
}

func b58(k banking.Pubkey) string { return base58.Encode(k[:]) }

// accts are the resolved accounts every case is given (each case's
// instruction uses its first few).
var accts = []string{b58(key(1)), b58(key(2)), b58(key(3)), b58(key(4)), b58(key(5))}

// TestSystem parses each System instruction, compared with Agave's
// parse_system output (its field names, types and accounts), and
// refuses the same instruction with one account too few.
func TestSystem(t *testing.T) {
	owner, base := key(9), key(8)
	a := accts
	cases := []struct {
		data bincode
		need int
		want string
	}{
		{bincode{}.u32(0).u64(55).u64(128).key(owner), 2,
			`{"info":{"lamports":55,"newAccount":"` + a[1] + `","owner":"` + b58(owner) + `","source":"` + a[0] + `","space":128},"type":"createAccount"}`},
		{bincode{}.u32(1).key(owner), 1,
			`{"info":{"account":"` + a[0] + `","owner":"` + b58(owner) + `"},"type":"assign"}`},
		{bincode{}.u32(2).u64(1_000_000_000_000), 2,
			`{"info":{"destination":"` + a[1] + `","lamports":1000000000000,"source":"` + a[0] + `"},"type":"transfer"}`},
		{bincode{}.u32(3).key(base).str("seed-1").u64(7).u64(80).key(owner), 2,
			`{"info":{"base":"` + b58(base) + `","lamports":7,"newAccount":"` + a[1] + `","owner":"` + b58(owner) + `","seed":"seed-1","source":"` + a[0] + `","space":80},"type":"createAccountWithSeed"}`},
		{bincode{}.u32(4), 3,
			`{"info":{"nonceAccount":"` + a[0] + `","nonceAuthority":"` + a[2] + `","recentBlockhashesSysvar":"` + a[1] + `"},"type":"advanceNonce"}`},
		{bincode{}.u32(5).u64(42), 5,
			`{"info":{"destination":"` + a[1] + `","lamports":42,"nonceAccount":"` + a[0] + `","nonceAuthority":"` + a[4] + `","recentBlockhashesSysvar":"` + a[2] + `","rentSysvar":"` + a[3] + `"},"type":"withdrawFromNonce"}`},
		{bincode{}.u32(6).key(owner), 3,
			`{"info":{"nonceAccount":"` + a[0] + `","nonceAuthority":"` + b58(owner) + `","recentBlockhashesSysvar":"` + a[1] + `","rentSysvar":"` + a[2] + `"},"type":"initializeNonce"}`},
		{bincode{}.u32(7).key(owner), 2,
			`{"info":{"newAuthorized":"` + b58(owner) + `","nonceAccount":"` + a[0] + `","nonceAuthority":"` + a[1] + `"},"type":"authorizeNonce"}`},
		{bincode{}.u32(8).u64(4096), 1,
			`{"info":{"account":"` + a[0] + `","space":4096},"type":"allocate"}`},
		{bincode{}.u32(9).key(base).str("s").u64(10).key(owner), 2,
			`{"info":{"account":"` + a[0] + `","base":"` + b58(base) + `","owner":"` + b58(owner) + `","seed":"s","space":10},"type":"allocateWithSeed"}`},
		{bincode{}.u32(10).key(base).str("").key(owner), 2,
			`{"info":{"account":"` + a[0] + `","base":"` + b58(base) + `","owner":"` + b58(owner) + `","seed":""},"type":"assignWithSeed"}`},
		{bincode{}.u32(11).u64(99).str("from").key(owner), 3,
			`{"info":{"destination":"` + a[2] + `","lamports":99,"source":"` + a[0] + `","sourceBase":"` + a[1] + `","sourceOwner":"` + b58(owner) + `","sourceSeed":"from"},"type":"transferWithSeed"}`},
		{bincode{}.u32(12), 1,
			`{"info":{"nonceAccount":"` + a[0] + `"},"type":"upgradeNonce"}`},
	}
	for _, c := range cases {
		name, v, ok := parsed.Instruction(&txview.SystemProgram, c.data, a[:c.need])
		if !ok || name != "system" {
			t.Fatalf("%x: %q %v", c.data, name, ok)
		}
		got, _ := json.Marshal(v)
		if string(got) != c.want {
			t.Errorf("%x:\n got %s\nwant %s", c.data, got, c.want)
		}
		if _, _, ok := parsed.Instruction(&txview.SystemProgram, c.data, a[:c.need-1]); ok {
			t.Errorf("%x parsed with %d accounts, wants %d", c.data, c.need-1, c.need)
		}
		// bincode allows trailing bytes; a truncated instruction is
		// refused.
		if _, _, ok := parsed.Instruction(&txview.SystemProgram, append(c.data, 0xff), a[:c.need]); !ok {
			t.Errorf("%x with a trailing byte refused", c.data)
		}
		if len(c.data) > 4 {
			if _, _, ok := parsed.Instruction(&txview.SystemProgram, c.data[:len(c.data)-1], a[:c.need]); ok {
				t.Errorf("%x truncated parsed", c.data)
			}
		}
	}
	// The runtime's own Transfer reads as Agave's.
	tr := txview.Transfer(key(1), key(2), 5)
	if _, v, ok := parsed.Instruction(&tr.Program, tr.Data, a[:2]); !ok || v.(parsed.Parsed).Info["lamports"] != uint64(5) {
		t.Fatalf("txview.Transfer: %v %v", v, ok)
	}
	for _, bad := range []bincode{nil, {1, 0}, bincode{}.u32(13), bincode{}.u32(3).key(base).u64(2).append(0xc3, 0x28)} {
		if _, _, ok := parsed.Instruction(&txview.SystemProgram, bad, a); ok {
			t.Errorf("%x parsed", bad)
		}
	}
}

func (b bincode) append(x ...byte) bincode { return append(b, x...) }

// TestLookupTable parses the lookup-table program's instructions, built
// by the runtime's own builders, as Agave's parse_address_lookup_table.
func TestLookupTable(t *testing.T) {
	auth, payer := key(1), key(2)
	create, tbl := runtime.CreateLookupTable(auth, payer, 77)
	keys := func(ix txview.Ix) []string {
		out := make([]string, len(ix.Accounts))
		for i, m := range ix.Accounts {
			out[i] = base58.Encode(m.Key[:])
		}
		return out
	}
	a := keys(create)
	_, v, ok := parsed.Instruction(&create.Program, create.Data, a)
	got, _ := json.Marshal(v)
	bump := create.Data[12]
	want := `{"info":{"bumpSeed":` + itoa(int(bump)) + `,"lookupTableAccount":"` + b58(tbl) + `","lookupTableAuthority":"` + b58(auth) + `","payerAccount":"` + b58(payer) + `","recentSlot":77,"systemProgram":"11111111111111111111111111111111"},"type":"createLookupTable"}`
	if !ok || string(got) != want {
		t.Fatalf("create:\n got %s\nwant %s", got, want)
	}
	ext := runtime.ExtendLookupTable(tbl, auth, payer, []banking.Pubkey{key(5), key(6)})
	_, v, ok = parsed.Instruction(&ext.Program, ext.Data, keys(ext))
	got, _ = json.Marshal(v)
	want = `{"info":{"lookupTableAccount":"` + b58(tbl) + `","lookupTableAuthority":"` + b58(auth) + `","newAddresses":["` + b58(key(5)) + `","` + b58(key(6)) + `"],"payerAccount":"` + b58(payer) + `","systemProgram":"11111111111111111111111111111111"},"type":"extendLookupTable"}`
	if !ok || string(got) != want {
		t.Fatalf("extend:\n got %s\nwant %s", got, want)
	}
	// Without the payer, Agave leaves payer and System out.
	_, v, ok = parsed.Instruction(&ext.Program, ext.Data, keys(ext)[:2])
	if got, _ = json.Marshal(v); !ok || strings.Contains(string(got), "payerAccount") {
		t.Fatalf("extend without payer: %s", got)
	}
	for _, c := range []struct {
		ix   txview.Ix
		want string
	}{
		{runtime.FreezeLookupTable(tbl, auth), "freezeLookupTable"},
		{runtime.DeactivateLookupTable(tbl, auth), "deactivateLookupTable"},
		{runtime.CloseLookupTable(tbl, auth, payer), "closeLookupTable"},
	} {
		a := keys(c.ix)
		_, v, ok := parsed.Instruction(&c.ix.Program, c.ix.Data, a)
		if !ok || v.(parsed.Parsed).Type != c.want || v.(parsed.Parsed).Info["lookupTableAccount"] != b58(tbl) || v.(parsed.Parsed).Info["lookupTableAuthority"] != b58(auth) {
			t.Fatalf("%s: %v %v", c.want, v, ok)
		}
		if _, _, ok := parsed.Instruction(&c.ix.Program, c.ix.Data, a[:len(a)-1]); ok {
			t.Fatalf("%s parsed with too few accounts", c.want)
		}
	}
	// An extension claiming more addresses than its data holds.
	bad := bincode{}.u32(2).u64(3).key(key(5))
	if _, _, ok := parsed.Instruction(&banking.LookupTableProgram, bad, a); ok {
		t.Fatal("a short extension parsed")
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestMemoAndOthers(t *testing.T) {
	name, v, ok := parsed.Instruction(&txview.MemoProgram, []byte("hi"), nil)
	if name != "spl-memo" || v != "hi" || !ok {
		t.Fatalf("memo: %q %v %v", name, v, ok)
	}
	if _, _, ok := parsed.Instruction(&txview.MemoV1Program, []byte{0xff}, nil); ok {
		t.Fatal("a memo that is not UTF-8 parsed")
	}
	if _, _, ok := parsed.Instruction(&txview.ComputeBudgetProgram, []byte{2, 0, 0, 0, 0}, nil); ok {
		t.Fatal("compute budget parsed: Agave has no parser for it")
	}
}

// TestNonceAccount reads a nonce account as Agave's parse_nonce.
func TestNonceAccount(t *testing.T) {
	auth, hash := key(3), key(4)
	data := bincode{}.u32(1).u32(1).key(auth).key(hash).u64(5000)
	d, ok := parsed.Account(&txview.SystemProgram, data)
	got, _ := json.Marshal(d)
	want := `{"program":"nonce","parsed":{"type":"initialized","info":{"authority":"` + b58(auth) + `","blockhash":"` + b58(hash) + `","feeCalculator":{"lamportsPerSignature":"5000"}}},"space":80}`
	if !ok || string(got) != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	// Legacy versions read the same.
	if d, ok := parsed.Account(&txview.SystemProgram, bincode{}.u32(0).u32(1).key(auth).key(hash).u64(0)); !ok || d.Parsed.(parsed.Typed).Info.(parsed.NonceData).FeeCalculator.LamportsPerSignature != "0" {
		t.Fatalf("legacy nonce: %v %v", d, ok)
	}
	// Uninitialized, empty, short or of an unknown version: base64.
	for _, bad := range [][]byte{nil, make([]byte, 80), data[:79], bincode{}.u32(2).u32(1).key(auth).key(hash).u64(0)} {
		if _, ok := parsed.Account(&txview.SystemProgram, bad); ok {
			t.Errorf("%x parsed", bad)
		}
	}
	if _, ok := parsed.Account(&txview.VoteProgram, data); ok {
		t.Error("an account of a program without a parser parsed")
	}
}

// TestLookupTableAccount reads tables as Agave's account-decoder.
func TestLookupTableAccount(t *testing.T) {
	data := make([]byte, bank.TableMetaSize+64)
	m := bank.NewTableMeta(key(7))
	m.LastExtendedSlot, m.LastExtendedStart = 12, 1
	bank.PutMeta(data, m)
	k5, k6 := key(5), key(6)
	copy(data[bank.TableMetaSize:], k5[:])
	copy(data[bank.TableMetaSize+32:], k6[:])
	d, ok := parsed.Account(&banking.LookupTableProgram, data)
	got, _ := json.Marshal(d)
	want := `{"program":"address-lookup-table","parsed":{"type":"lookupTable","info":{"deactivationSlot":"18446744073709551615","lastExtendedSlot":"12","lastExtendedSlotStartIndex":1,"authority":"` + b58(key(7)) + `","addresses":["` + b58(k5) + `","` + b58(k6) + `"]}},"space":120}`
	if !ok || string(got) != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	m.HasAuthority = false
	bank.PutMeta(data, m)
	d, _ = parsed.Account(&banking.LookupTableProgram, data[:bank.TableMetaSize])
	if got, _ = json.Marshal(d.Parsed); strings.Contains(string(got), "authority") || !strings.Contains(string(got), `"addresses":[]`) {
		t.Fatalf("frozen, empty table: %s", got)
	}
	d, ok = parsed.Account(&banking.LookupTableProgram, make([]byte, bank.TableMetaSize))
	if got, _ = json.Marshal(d.Parsed); !ok || string(got) != `{"type":"uninitialized"}` {
		t.Fatalf("uninitialized: %s %v", got, ok)
	}
	if _, ok := parsed.Account(&banking.LookupTableProgram, data[:bank.TableMetaSize+5]); ok {
		t.Fatal("a table with a partial address parsed")
	}
}

// FuzzInstruction: no input panics, and what parses has every account
// it names among those given.
func FuzzInstruction(f *testing.F) {
	f.Add(byte(0), []byte(bincode{}.u32(3).key(key(1)).str("x").u64(1).u64(2).key(key(2))), 3)
	f.Add(byte(1), []byte(bincode{}.u32(2).u64(2).key(key(1)).key(key(2))), 4)
	f.Add(byte(2), []byte(bincode{}.u32(1).u32(1).key(key(1)).key(key(2)).u64(3)), 0)
	f.Fuzz(func(t *testing.T, prog byte, data []byte, n int) {
		if n < 0 || n > len(accts) {
			n = len(accts)
		}
		switch prog % 3 {
		case 0:
			parsed.Instruction(&txview.SystemProgram, data, accts[:n])
		case 1:
			parsed.Instruction(&banking.LookupTableProgram, data, accts[:n])
		case 2:
			parsed.Account(&txview.SystemProgram, data)
			parsed.Account(&banking.LookupTableProgram, data)
		}
	})
}
