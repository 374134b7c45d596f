package banking

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"filippo.io/edwards25519"
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

func b58(t testing.TB, s string) Pubkey {
	t.Helper()
	b, err := base58.Decode(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("%s: %v", s, err)
	}
	return Pubkey(b)
}

func TestLookupTableProgramAddress(t *testing.T) {
	if got := base58.Encode(LookupTableProgram[:]); got != "AddressLookupTab1e1111111111111111111111111" {
		t.Fatalf("program id %s", got)
	}
}

// TestCreateProgramAddress checks the derivation against the vectors of
// the Solana SDK's test_create_program_address.
func TestCreateProgramAddress(t *testing.T) {
	prog := b58(t, "BPFLoaderUpgradeab1e11111111111111111111111")
	seedKey := b58(t, "SeedPubey1111111111111111111111111111111111")
	cases := []struct {
		seeds [][]byte
		want  string
	}{
		{[][]byte{{}, {1}}, "BwqrghZA2htAcqq8dzP1WDAhTXYTYWj7CHxF5j7TDBAe"},
		{[][]byte{[]byte("☉"), {0}}, "13yWmRpaTR4r5nAktwLqMpRNr28tnVUZw26rTvPSSB19"},
		{[][]byte{[]byte("Talking"), []byte("Squirrels")}, "2fnQrngrQT4SeLcdToJAD96phoEjNL2man2kfRLCASVk"},
		{[][]byte{seedKey[:], {1}}, "976ymqVnfE32QFe6NfGDctSvVa36LWnvYxhU6G2232YL"},
	}
	for _, c := range cases {
		got, err := CreateProgramAddress(&prog, c.seeds...)
		if err != nil || base58.Encode(got[:]) != c.want {
			t.Errorf("%q: %s, %v; want %s", c.seeds, base58.Encode(got[:]), err, c.want)
		}
	}
}

// TestCreateProgramAddressOffCurve checks the off-curve rule against
// another decoder: an address is refused exactly when filippo.io's
// edwards25519 decodes the hash as a point.
func TestCreateProgramAddressOffCurve(t *testing.T) {
	var refused int
	for i := 0; i < 512; i++ {
		seed := binary.LittleEndian.AppendUint32(nil, uint32(i))
		_, err := CreateProgramAddress(&LookupTableProgram, seed)
		var k Pubkey
		h := sha256Preimage(seed)
		copy(k[:], h)
		_, onCurve := new(edwards25519.Point).SetBytes(k[:])
		if (err != nil) != (onCurve == nil) {
			t.Fatalf("seed %d: refused %v, on the curve %v", i, err != nil, onCurve == nil)
		}
		if err != nil {
			refused++
		}
	}
	if refused < 150 || refused > 362 { // about half
		t.Fatalf("%d of 512 refused", refused)
	}
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }

func sha256Preimage(seed []byte) []byte {
	var b bytes.Buffer
	b.Write(seed)
	b.Write(LookupTableProgram[:])
	b.WriteString(pdaMarker)
	h := sha256Sum(b.Bytes())
	return h[:]
}

func TestLookupTableAddress(t *testing.T) {
	auth := gpub(0)
	k, bump := LookupTableAddress(auth, 7)
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], 7)
	again, err := CreateProgramAddress(&LookupTableProgram, auth[:], s[:], []byte{bump})
	if err != nil || again != k {
		t.Fatalf("bump %d does not recreate %x: %v", bump, k, err)
	}
	for b := int(bump) + 1; b <= 255; b++ {
		if _, err := CreateProgramAddress(&LookupTableProgram, auth[:], s[:], []byte{byte(b)}); !errors.Is(err, errOnCurve) {
			t.Fatalf("bump %d above the found %d is off the curve", b, bump)
		}
	}
}

// tableData builds a table account's data: meta, then n addresses.
func tableData(m TableMeta, n int) []byte {
	d := make([]byte, TableMetaSize+32*n)
	putMeta(d, m)
	for i := 0; i < n; i++ {
		d[TableMetaSize+32*i] = byte(i)
		d[TableMetaSize+32*i+1] = 0xa1
	}
	return d
}

func TestTableLayout(t *testing.T) {
	auth := Pubkey{9, 8, 7}
	m := newTableMeta(auth)
	m.LastExtendedSlot, m.LastExtendedStart = 0x0102, 3
	d := tableData(m, 1)
	// Solana's bincode: tag 1, deactivation slot, last extended slot, its
	// start index, Some(authority), padding, zeros to 56.
	want := []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x01, 0, 0, 0, 0, 0, 0, 3, 1}
	want = append(want, auth[:]...)
	want = append(want, 0, 0)
	if !bytes.Equal(d[:TableMetaSize], want) {
		t.Fatalf("meta\n got %x\nwant %x", d[:TableMetaSize], want)
	}
	frozen := m
	frozen.HasAuthority, frozen.Authority = false, Pubkey{}
	d2 := tableData(frozen, 0)
	if d2[21] != 0 || !bytes.Equal(d2[22:], make([]byte, TableMetaSize-22)) {
		t.Fatalf("frozen meta %x", d2)
	}

	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, errTableBadMeta},
		{"uninitialized", make([]byte, TableMetaSize), errTableUninitialized},
		{"bad tag", append([]byte{2, 0, 0, 0}, make([]byte, 52)...), errTableBadMeta},
		{"bad option", func() []byte { x := tableData(m, 0); x[21] = 2; return x }(), errTableBadMeta},
		{"short meta", tableData(m, 0)[:40], errTableBadMeta},
		{"frozen, short", tableData(frozen, 0)[:24], errTableBadAddresses},
		{"ragged addresses", append(tableData(m, 1), 0), errTableBadAddresses},
		{"ok", tableData(m, 2), nil},
		{"frozen ok", tableData(frozen, 3), nil},
	}
	for _, c := range cases {
		got, addrs, err := DecodeTable(c.data)
		if err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if err == nil && (len(addrs) != len(c.data)-TableMetaSize || got.LastExtendedStart != 3) {
			t.Errorf("%s: %+v, %d address bytes", c.name, got, len(addrs))
		}
	}
}

// refDecode is a slow reference decoder of the table meta, written from
// the bincode rules with encoding/binary.Read.
func refDecode(data []byte) (TableMeta, bool) {
	var m TableMeta
	if len(data) < TableMetaSize || (len(data)-TableMetaSize)%32 != 0 {
		return m, false
	}
	r := bytes.NewReader(data[:TableMetaSize])
	var hdr struct {
		Tag        uint32
		Deact, Ext uint64
		Start, Opt uint8
	}
	if binary.Read(r, binary.LittleEndian, &hdr) != nil || hdr.Tag != 1 || hdr.Opt > 1 {
		return m, false
	}
	m.DeactivationSlot, m.LastExtendedSlot, m.LastExtendedStart = hdr.Deact, hdr.Ext, hdr.Start
	if hdr.Opt == 1 {
		m.HasAuthority = true
		if _, err := r.Read(m.Authority[:]); err != nil {
			return m, false
		}
	}
	if binary.Read(r, binary.LittleEndian, &m.Padding) != nil {
		return m, false
	}
	return m, true
}

func FuzzDecodeTable(f *testing.F) {
	m := newTableMeta(Pubkey{1})
	f.Add(tableData(m, 0))
	f.Add(tableData(m, 3))
	m.HasAuthority = false
	f.Add(tableData(m, 1))
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte(nil), data...)
		got, addrs, err := DecodeTable(in)
		want, ok := refDecode(data)
		if (err == nil) != ok {
			t.Fatalf("DecodeTable err %v, reference ok %v", err, ok)
		}
		if !bytes.Equal(in, data) {
			t.Fatal("DecodeTable changed its input")
		}
		if err != nil {
			return
		}
		if got != want || len(addrs) != len(data)-TableMetaSize {
			t.Fatalf("got %+v (%d), want %+v", got, len(addrs), want)
		}
		// Re-encoding the meta decodes to the same meta.
		putMeta(in, got)
		again, _, err := DecodeTable(in)
		if err != nil || again != got {
			t.Fatalf("re-encoded: %+v, %v", again, err)
		}
	})
}

func TestTableStatus(t *testing.T) {
	const cur = 1000
	cases := []struct {
		deact     uint64
		want      tableStatus
		remaining uint64
	}{
		{math.MaxUint64, tableActivated, 0},
		{cur, tableDeactivating, 513},
		{cur - 1, tableDeactivating, 512},
		{cur - 512, tableDeactivating, 1},
		{cur - 513, tableDeactivated, 0},
	}
	for _, c := range cases {
		m := TableMeta{DeactivationSlot: c.deact}
		if st, rem := m.status(cur); st != c.want || rem != c.remaining {
			t.Errorf("deactivated %d: %d %d, want %d %d", c.deact, st, rem, c.want, c.remaining)
		}
	}
	m := TableMeta{DeactivationSlot: math.MaxUint64, LastExtendedSlot: cur, LastExtendedStart: 2}
	if n, ok := m.activeLen(cur, 5); !ok || n != 2 {
		t.Fatalf("extended this slot: %d %v", n, ok)
	}
	if n, ok := m.activeLen(cur+1, 5); !ok || n != 5 {
		t.Fatalf("extended last slot: %d %v", n, ok)
	}
}

// altEnv runs lookup table instructions through execute against accounts
// the test sets up, in working slot slot.
type altEnv struct {
	t     *testing.T
	slot  uint64
	accts map[Pubkey]*Account
}

func newAltEnv(t *testing.T, slot uint64) *altEnv {
	e := &altEnv{t: t, slot: slot, accts: map[Pubkey]*Account{}}
	e.fund(gpub(0), 10_000_000_000)
	return e
}

func (e *altEnv) fund(k Pubkey, lamports uint64) {
	e.accts[k] = &Account{key: k, Owner: SystemProgram, Lamports: lamports}
}

func (e *altEnv) table(k Pubkey, m TableMeta, n int) *Account {
	d := tableData(m, n)
	a := &Account{key: k, Owner: LookupTableProgram, Lamports: RentExemptMinimum(len(d)), Data: d}
	e.accts[k] = a
	return a
}

// run executes ixs paid by gkey(0), signed also by signers.
func (e *altEnv) run(ixs []txview.Ix, signers ...ed25519.PrivateKey) execResult {
	e.t.Helper()
	tx := signTx(e.t, Pubkey{}, gkey(0), ixs, signers...)
	v, err := txview.Parse(tx)
	if err != nil {
		e.t.Fatal(err)
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		e.t.Fatal(err)
	}
	accts := make([]*Account, v.NumStaticKeys())
	for i := range accts {
		k := *v.StaticKey(i)
		if e.accts[k] == nil {
			a := &Account{key: k, Owner: SystemProgram}
			if k == LookupTableProgram || k == SystemProgram {
				a.Owner, a.Executable, a.Lamports = NativeLoader, true, 1
			}
			e.accts[k] = a
		}
		accts[i] = e.accts[k]
	}
	return execute(&execTx{view: v, accounts: accts, writable: shapeOf(v).writable(v, nil), fee: FeeOf(v, cb), cb: cb, slot: e.slot})
}

func errString(r execResult) string { return r.err.String() }

func TestLookupTableCreate(t *testing.T) {
	const slot = 1000
	auth := gpub(1)
	cases := []struct {
		name   string
		ix     func() txview.Ix
		setup  func(e *altEnv, table Pubkey)
		want   string
		units  uint64
		exists bool
	}{
		{name: "ok", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, gpub(0), slot-1); return ix }, want: "ok", units: 1200, exists: true},
		{name: "oldest recent slot", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, gpub(0), slot-512); return ix }, want: "ok", units: 1200, exists: true},
		{name: "pre-funded table", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, gpub(0), slot-1); return ix },
			setup: func(e *altEnv, table Pubkey) { e.fund(table, RentExemptMinimum(TableMetaSize)) }, want: "ok", units: 1050, exists: true},
		{name: "current slot is not recent", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, gpub(0), slot); return ix }, want: "InstructionError(0, InvalidInstructionData)"},
		{name: "slot too old", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, gpub(0), slot-513); return ix }, want: "InstructionError(0, InvalidInstructionData)"},
		{name: "wrong address", ix: func() txview.Ix {
			ix, _ := CreateLookupTable(auth, gpub(0), slot-1)
			ix.Accounts[0].Key = Pubkey{0x77}
			return ix
		}, want: "InstructionError(0, InvalidArgument)"},
		{name: "bump on the curve", ix: func() txview.Ix {
			ix, _ := CreateLookupTable(auth, gpub(0), slot-1)
			ix.Data[12]++ // the bumps above the found one are on the curve
			return ix
		}, want: "InstructionError(0, InvalidSeeds)"},
		{name: "payer does not sign", ix: func() txview.Ix {
			ix, _ := CreateLookupTable(auth, gpub(2), slot-1)
			ix.Accounts[2].Signer = false
			return ix
		}, want: "InstructionError(0, MissingRequiredSignature)"},
		{name: "short data", ix: func() txview.Ix {
			ix, _ := CreateLookupTable(auth, gpub(0), slot-1)
			ix.Data = ix.Data[:12]
			return ix
		}, want: "InstructionError(0, InvalidInstructionData)"},
		{name: "already a table: no-op", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, gpub(0), slot-1); return ix },
			setup: func(e *altEnv, table Pubkey) { e.table(table, newTableMeta(auth), 2) }, want: "ok", units: 750, exists: true},
		{name: "account in use", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, gpub(0), slot-1); return ix },
			setup: func(e *altEnv, table Pubkey) {
				e.accts[table] = &Account{key: table, Owner: SystemProgram, Lamports: RentExemptMinimum(TableMetaSize + 1), Data: []byte{0}}
			}, want: "InstructionError(0, Custom(0))"},
		{name: "payer cannot fund", ix: func() txview.Ix { ix, _ := CreateLookupTable(auth, gpub(3), slot-1); return ix },
			setup: func(e *altEnv, _ Pubkey) { e.fund(gpub(3), 1_000_000) }, want: "InstructionError(0, Custom(1))"},
		{name: "unknown instruction", ix: func() txview.Ix {
			return txview.Ix{Program: LookupTableProgram, Data: []byte{5, 0, 0, 0}, Accounts: []txview.AccountMeta{{Key: Pubkey{1}, Writable: true}}}
		}, want: "InstructionError(0, InvalidInstructionData)"},
		{name: "no accounts", ix: func() txview.Ix {
			return txview.Ix{Program: LookupTableProgram, Data: []byte{3, 0, 0, 0}}
		}, want: "InstructionError(0, NotEnoughAccountKeys)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newAltEnv(t, slot)
			ix := c.ix()
			var table Pubkey
			if len(ix.Accounts) > 0 {
				table = ix.Accounts[0].Key
			}
			if c.setup != nil {
				c.setup(e, table)
			}
			var signers []ed25519.PrivateKey
			for _, m := range ix.Accounts {
				if m.Signer && m.Key != gpub(0) {
					for i := 1; i < 4; i++ {
						if gpub(i) == m.Key {
							signers = append(signers, gkey(i))
						}
					}
				}
			}
			r := e.run([]txview.Ix{ix}, signers...)
			if got := errString(r); got != c.want {
				t.Fatalf("%s, want %s", got, c.want)
			}
			if c.want != "ok" {
				return
			}
			if r.units != c.units {
				t.Errorf("units %d, want %d", r.units, c.units)
			}
			a := e.accts[table]
			if c.exists {
				m, addrs, err := DecodeTable(a.Data)
				if err != nil || a.Owner != LookupTableProgram || !m.HasAuthority || m.Authority != auth || m.DeactivationSlot != math.MaxUint64 {
					t.Fatalf("table %+v %v owner %x", m, err, a.Owner)
				}
				if a.Lamports < RentExemptMinimum(len(a.Data)) || (c.name == "ok" && (len(addrs) != 0 || a.Lamports != RentExemptMinimum(TableMetaSize))) {
					t.Fatalf("table holds %d lamports, %d bytes", a.Lamports, len(a.Data))
				}
			}
		})
	}
}

func TestLookupTableInstructions(t *testing.T) {
	const slot = 1000
	auth, other := gpub(1), gpub(2)
	tk := Pubkey{0x7a, 0xb1}
	active := newTableMeta(auth)
	deact := func(d uint64) TableMeta { m := active; m.DeactivationSlot = d; return m }
	frozen := active
	frozen.HasAuthority, frozen.Authority = false, Pubkey{}
	addrs := func(n int) []Pubkey {
		out := make([]Pubkey, n)
		for i := range out {
			out[i] = Pubkey{0xee, byte(i)}
		}
		return out
	}
	type check func(t *testing.T, e *altEnv)
	metaIs := func(f func(m TableMeta, n int) bool) check {
		return func(t *testing.T, e *altEnv) {
			a := e.accts[tk]
			m, ad, err := DecodeTable(a.Data)
			if err != nil || !f(m, len(ad)/32) {
				t.Fatalf("table %+v with %d addresses: %v", m, len(ad)/32, err)
			}
			if a.Lamports < RentExemptMinimum(len(a.Data)) {
				t.Fatalf("table not rent-exempt: %d lamports for %d bytes", a.Lamports, len(a.Data))
			}
		}
	}
	cases := []struct {
		name   string
		meta   TableMeta
		n      int
		owner  Pubkey // zero: the program
		ix     txview.Ix
		signer ed25519.PrivateKey
		want   string
		check  check
	}{
		{"freeze", active, 1, Pubkey{}, FreezeLookupTable(tk, auth), gkey(1), "ok", metaIs(func(m TableMeta, n int) bool { return !m.HasAuthority && n == 1 })},
		{"freeze empty", active, 0, Pubkey{}, FreezeLookupTable(tk, auth), gkey(1), "InstructionError(0, InvalidInstructionData)", nil},
		{"freeze frozen", frozen, 1, Pubkey{}, FreezeLookupTable(tk, auth), gkey(1), "InstructionError(0, Immutable)", nil},
		{"freeze deactivated", deact(slot - 1), 1, Pubkey{}, FreezeLookupTable(tk, auth), gkey(1), "InstructionError(0, InvalidArgument)", nil},
		{"freeze by another", active, 1, Pubkey{}, FreezeLookupTable(tk, other), gkey(2), "InstructionError(0, IncorrectAuthority)", nil},
		{"freeze unsigned", active, 1, Pubkey{}, func() txview.Ix { ix := FreezeLookupTable(tk, auth); ix.Accounts[1].Signer = false; return ix }(), nil, "InstructionError(0, MissingRequiredSignature)", nil},
		{"freeze wrong owner", active, 1, NativeLoader, FreezeLookupTable(tk, auth), gkey(1), "InstructionError(0, InvalidAccountOwner)", nil},
		{"extend", active, 2, Pubkey{}, ExtendLookupTable(tk, auth, gpub(0), addrs(3)), gkey(1), "ok",
			metaIs(func(m TableMeta, n int) bool { return n == 5 && m.LastExtendedSlot == slot && m.LastExtendedStart == 2 })},
		{"extend again in the slot", func() TableMeta { m := active; m.LastExtendedSlot, m.LastExtendedStart = slot, 1; return m }(), 2, Pubkey{}, ExtendLookupTable(tk, auth, gpub(0), addrs(3)), gkey(1), "ok",
			metaIs(func(m TableMeta, n int) bool { return n == 5 && m.LastExtendedSlot == slot && m.LastExtendedStart == 1 })},
		{"extend to 256", active, 250, Pubkey{}, ExtendLookupTable(tk, auth, gpub(0), addrs(6)), gkey(1), "ok",
			metaIs(func(m TableMeta, n int) bool { return n == 256 && m.LastExtendedStart == 250 })},
		{"extend past 256", active, 250, Pubkey{}, ExtendLookupTable(tk, auth, gpub(0), addrs(7)), gkey(1), "InstructionError(0, InvalidInstructionData)", nil},
		{"extend full", active, 256, Pubkey{}, ExtendLookupTable(tk, auth, gpub(0), addrs(1)), gkey(1), "InstructionError(0, InvalidArgument)", nil},
		{"extend empty", active, 1, Pubkey{}, ExtendLookupTable(tk, auth, gpub(0), nil), gkey(1), "InstructionError(0, InvalidInstructionData)", nil},
		{"extend frozen", frozen, 1, Pubkey{}, ExtendLookupTable(tk, auth, gpub(0), addrs(1)), gkey(1), "InstructionError(0, Immutable)", nil},
		{"extend deactivated", deact(slot), 1, Pubkey{}, ExtendLookupTable(tk, auth, gpub(0), addrs(1)), gkey(1), "InstructionError(0, InvalidArgument)", nil},
		{"extend by another", active, 1, Pubkey{}, ExtendLookupTable(tk, other, gpub(0), addrs(1)), gkey(2), "InstructionError(0, IncorrectAuthority)", nil},
		{"extend uninitialized", TableMeta{}, -1, Pubkey{}, ExtendLookupTable(tk, auth, gpub(0), addrs(1)), gkey(1), "InstructionError(0, UninitializedAccount)", nil},
		{"deactivate", active, 1, Pubkey{}, DeactivateLookupTable(tk, auth), gkey(1), "ok", metaIs(func(m TableMeta, _ int) bool { return m.DeactivationSlot == slot })},
		{"deactivate twice", deact(slot - 5), 1, Pubkey{}, DeactivateLookupTable(tk, auth), gkey(1), "InstructionError(0, InvalidArgument)", nil},
		{"deactivate frozen", frozen, 1, Pubkey{}, DeactivateLookupTable(tk, auth), gkey(1), "InstructionError(0, Immutable)", nil},
		{"close", deact(slot - 513), 3, Pubkey{}, CloseLookupTable(tk, auth, other), gkey(1), "ok", func(t *testing.T, e *altEnv) {
			if a := e.accts[tk]; a.Lamports != 0 || len(a.Data) != 0 {
				t.Fatalf("closed table: %d lamports, %d bytes", a.Lamports, len(a.Data))
			}
			if got := e.accts[other].Lamports; got != RentExemptMinimum(TableMetaSize+3*32) {
				t.Fatalf("recipient got %d", got)
			}
		}},
		{"close active", active, 1, Pubkey{}, CloseLookupTable(tk, auth, other), gkey(1), "InstructionError(0, InvalidArgument)", nil},
		{"close cooling down", deact(slot - 512), 1, Pubkey{}, CloseLookupTable(tk, auth, other), gkey(1), "InstructionError(0, InvalidArgument)", nil},
		{"close deactivated this slot", deact(slot), 1, Pubkey{}, CloseLookupTable(tk, auth, other), gkey(1), "InstructionError(0, InvalidArgument)", nil},
		{"close into itself", deact(slot - 600), 1, Pubkey{}, CloseLookupTable(tk, auth, tk), gkey(1), "InstructionError(0, InvalidArgument)", nil},
		{"close by another", deact(slot - 600), 1, Pubkey{}, CloseLookupTable(tk, other, other), gkey(2), "InstructionError(0, IncorrectAuthority)", nil},
		{"close frozen", frozen, 1, Pubkey{}, CloseLookupTable(tk, auth, other), gkey(1), "InstructionError(0, Immutable)", nil},
		{"close to a read-only recipient", deact(slot - 600), 1, Pubkey{}, func() txview.Ix { ix := CloseLookupTable(tk, auth, other); ix.Accounts[2].Writable = false; return ix }(), gkey(1), "InstructionError(0, ReadonlyLamportChange)", nil},
		{"extend a read-only table", active, 1, Pubkey{}, func() txview.Ix {
			ix := ExtendLookupTable(tk, auth, gpub(0), addrs(1))
			ix.Accounts[0].Writable = false
			return ix
		}(), gkey(1), "InstructionError(0, ReadonlyDataModified)", nil},
		{"close without recipient", deact(slot - 600), 1, Pubkey{}, func() txview.Ix { ix := CloseLookupTable(tk, auth, other); ix.Accounts = ix.Accounts[:2]; return ix }(), gkey(1), "InstructionError(0, NotEnoughAccountKeys)", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newAltEnv(t, slot)
			a := e.table(tk, c.meta, max(c.n, 0))
			if c.n < 0 {
				a.Data = make([]byte, TableMetaSize) // ProgramState::Uninitialized
			}
			if c.owner != (Pubkey{}) {
				a.Owner = c.owner
			}
			before := e.accts[gpub(0)].Lamports
			var signers []ed25519.PrivateKey
			if c.signer != nil {
				signers = append(signers, c.signer)
			}
			r := e.run([]txview.Ix{c.ix}, signers...)
			if got := errString(r); got != c.want {
				t.Fatalf("%s, want %s", got, c.want)
			}
			if c.want == "ok" {
				if c.check != nil {
					c.check(t, e)
				}
				if c.name == "extend" && before-e.accts[gpub(0)].Lamports <= 2*5000 {
					t.Fatal("the payer did not top up the table's rent")
				}
			}
		})
	}
}

// putTable installs a table account in b, as a committed one would be.
func putTable(b *Bank, k Pubkey, m TableMeta, addrs []Pubkey) {
	d := make([]byte, TableMetaSize, TableMetaSize+32*len(addrs))
	putMeta(d, m)
	for _, a := range addrs {
		d = append(d, a[:]...)
	}
	a := &Account{key: k, Owner: LookupTableProgram, Lamports: RentExemptMinimum(len(d)), Data: d}
	b.accounts[k] = a
	b.tables.note(a)
}

// v0Transfer signs a v0 transfer from gkey(payer) to `to`, loaded from
// table (whose contents are given) when found there.
func v0Transfer(t testing.TB, bh Pubkey, payer int, to Pubkey, table Pubkey, contents []Pubkey) []byte {
	t.Helper()
	m := txview.Message{Version: txview.V0, Payer: gpub(payer), Blockhash: bh,
		Instructions: []txview.Ix{txview.Transfer(gpub(payer), to, 1_000_000)},
		Tables:       []txview.LookupTable{{Key: table, Addresses: contents}}}
	tx, err := m.Sign(gkey(payer))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func TestLookupResolution(t *testing.T) {
	b := openBank(t, Config{})
	defer b.Close()
	s := newScheduler(t, SchedulerConfig{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	// Resolution reads the working slot; start it late enough that a
	// table can have cooled down (512 slots).
	b.slot = 2000
	endSlot(t, s)
	bh, slot := b.LatestBlockhash(), b.Slot()
	auth := gpub(15)
	dest := []Pubkey{{0xd0}, {0xd1}, {0xd2}}
	active := newTableMeta(auth)
	extendedNow := active
	extendedNow.LastExtendedSlot, extendedNow.LastExtendedStart = slot, 1
	cooling, cold := active, active
	cooling.DeactivationSlot = slot - 512
	cold.DeactivationSlot = slot - 513
	tables := map[string]Pubkey{"active": {0x70, 1}, "extended": {0x70, 2}, "cooling": {0x70, 3}, "bad data": {0x70, 4}, "deactivated": {0x70, 5}, "wrong owner": gpub(14)}
	putTable(b, tables["active"], active, dest)
	putTable(b, tables["extended"], extendedNow, dest)
	putTable(b, tables["cooling"], cooling, dest)
	putTable(b, tables["deactivated"], cold, dest)
	putTable(b, tables["bad data"], active, dest)
	b.accounts[tables["bad data"]].Data[0] = 7
	b.tables.note(b.accounts[tables["bad data"]])

	cases := []struct {
		name  string
		tx    []byte
		want  packet.Outcome
		funds Pubkey // gets the transfer when executed
	}{
		{"active", v0Transfer(t, bh, 1, dest[2], tables["active"], dest), packet.OutcomeExecutedOK, dest[2]},
		{"extended this slot, old index", v0Transfer(t, bh, 2, dest[0], tables["extended"], dest), packet.OutcomeExecutedOK, dest[0]},
		{"extended this slot, new index", v0Transfer(t, bh, 3, dest[1], tables["extended"], dest), packet.OutcomeLookupTableInvalidIndex, Pubkey{}},
		{"deactivating", v0Transfer(t, bh, 4, dest[1], tables["cooling"], dest), packet.OutcomeExecutedOK, dest[1]},
		{"deactivated", v0Transfer(t, bh, 5, dest[1], tables["deactivated"], dest), packet.OutcomeLookupTableNotFound, Pubkey{}},
		{"no such table", v0Transfer(t, bh, 6, dest[1], Pubkey{0x70, 9}, dest), packet.OutcomeLookupTableNotFound, Pubkey{}},
		{"index past the end", v0Transfer(t, bh, 7, Pubkey{0xd9}, tables["active"], append(dest[:3:3], Pubkey{0xd9})), packet.OutcomeLookupTableInvalidIndex, Pubkey{}},
		{"wrong owner", v0Transfer(t, bh, 8, dest[1], tables["wrong owner"], dest), packet.OutcomeLookupTableInvalidOwner, Pubkey{}},
		{"bad data", v0Transfer(t, bh, 9, dest[1], tables["bad data"], dest), packet.OutcomeLookupTableInvalidData, Pubkey{}},
	}
	var got []packet.Outcome
	s.cfg.OnDone = func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { got = append(got, o) }
	for _, c := range cases {
		got = got[:0]
		before := lamports(b, c.funds)
		s.Submit(batchOf(t, pool, c.tx))
		drain(t, s)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: outcomes %v, want %v", c.name, got, c.want)
			continue
		}
		if c.funds != (Pubkey{}) && lamports(b, c.funds) != before+1_000_000 {
			t.Errorf("%s: the looked-up recipient got %d", c.name, lamports(b, c.funds)-before)
		}
	}
	checkAccounting(t, s)
}

// TestLookupTableLifecycle takes a table through the scheduler: created
// and extended in one transaction, usable from the next slot (also after
// the ledger is reopened), still usable while it cools down after a
// deactivation, closed once cold, and missing after.
func TestLookupTableLifecycle(t *testing.T) {
	dir := t.TempDir()
	b := openBank(t, Config{Dir: dir})
	s := newScheduler(t, SchedulerConfig{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	var got []packet.Outcome
	onDone := func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { got = append(got, o) }
	s.cfg.OnDone = onDone
	run := func(tx []byte) packet.Outcome {
		t.Helper()
		got = got[:0]
		s.Submit(batchOf(t, pool, tx))
		drain(t, s)
		if len(got) != 1 {
			t.Fatalf("outcomes %v", got)
		}
		return got[0]
	}
	endSlot(t, s)
	auth := gpub(0)
	dest := []Pubkey{{0xd0}, {0xd1}, {0xd2}}
	created := b.Slot()
	create, table := CreateLookupTable(auth, auth, created-1)
	tx := signTx(t, b.LatestBlockhash(), gkey(0), []txview.Ix{create, ExtendLookupTable(table, auth, auth, dest)})
	if o := run(tx); o != packet.OutcomeExecutedOK {
		t.Fatalf("create and extend: %v %v", o, s.Stats().Errors)
	}
	if o := run(v0Transfer(t, b.LatestBlockhash(), 1, dest[1], table, dest)); o != packet.OutcomeLookupTableInvalidIndex {
		t.Fatalf("in the slot it was extended: %v", o)
	}
	endSlot(t, s)
	// What getAccountInfo shows: Solana's layout.
	a, ok := b.Account(table)
	want := tableData(TableMeta{DeactivationSlot: math.MaxUint64, LastExtendedSlot: created, Authority: auth, HasAuthority: true}, 0)
	for _, d := range dest {
		want = append(want, d[:]...)
	}
	if !ok || a.Owner != LookupTableProgram || !bytes.Equal(a.Data, want) || a.Lamports != RentExemptMinimum(len(want)) {
		t.Fatalf("table account %+v\nwant data %x", a, want)
	}
	if o := run(v0Transfer(t, b.LatestBlockhash(), 2, dest[1], table, dest)); o != packet.OutcomeExecutedOK {
		t.Fatalf("next slot: %v %v", o, s.Stats().Errors)
	}

	// A reopened ledger knows its tables.
	endSlot(t, s)
	s.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBank(t, Config{Dir: dir})
	defer b.Close()
	s = newScheduler(t, SchedulerConfig{Workers: 2}, b)
	s.cfg.OnDone = onDone
	if o := run(v0Transfer(t, b.LatestBlockhash(), 3, dest[2], table, dest)); o != packet.OutcomeExecutedOK {
		t.Fatalf("after reopening: %v", o)
	}
	if lamports(b, dest[1]) != 1_000_000 || lamports(b, dest[2]) != 1_000_000 {
		t.Fatalf("recipients hold %d, %d", lamports(b, dest[1]), lamports(b, dest[2]))
	}

	if o := run(signTx(t, b.LatestBlockhash(), gkey(0), []txview.Ix{DeactivateLookupTable(table, auth)})); o != packet.OutcomeExecutedOK {
		t.Fatalf("deactivate: %v", o)
	}
	closeTx := func() []byte {
		return signTx(t, b.LatestBlockhash(), gkey(0), []txview.Ix{CloseLookupTable(table, auth, gpub(4)), txview.SetComputeUnitPrice(uint64(b.Slot()))})
	}
	if o := run(closeTx()); o != packet.OutcomeExecutedFailed {
		t.Fatalf("close while cooling down: %v", o)
	}
	endSlot(t, s)
	if o := run(v0Transfer(t, b.LatestBlockhash(), 5, dest[2], table, dest)); o != packet.OutcomeExecutedOK {
		t.Fatalf("while cooling down: %v", o)
	}
	// Let it cool: the bank's slots need not be consecutive for that
	// (SlotHashes in tpu is the working slot's last 512).
	b.slot += slotHashesMax
	endSlot(t, s)
	if o := run(v0Transfer(t, b.LatestBlockhash(), 6, dest[2], table, dest)); o != packet.OutcomeLookupTableNotFound {
		t.Fatalf("cold: %v", o)
	}
	before := lamports(b, gpub(4))
	if o := run(closeTx()); o != packet.OutcomeExecutedOK {
		t.Fatalf("close: %v %v", o, s.Stats().Errors)
	}
	if _, ok := b.Account(table); ok || lamports(b, gpub(4)) != before+RentExemptMinimum(len(want)) {
		t.Fatalf("after close: table exists %v, recipient gained %d", ok, lamports(b, gpub(4))-before)
	}
	if _, ok := b.tables[table]; ok {
		t.Fatal("the index still holds the closed table")
	}
	checkAccounting(t, s)
}

// TestLookupLocks: the locks cover looked-up accounts, so two
// transactions writing the same looked-up account conflict (the
// thread-aware locks put them on one worker) and one writing another
// does not.
func TestLookupLocks(t *testing.T) {
	for _, m := range []Method{Greedy, PrioGraph} {
		t.Run(m.String(), func(t *testing.T) {
			b := openBank(t, Config{})
			defer b.Close()
			s := newScheduler(t, SchedulerConfig{Workers: 2, Method: m}, b)
			pool, _ := packet.NewPool(packet.Config{})
			dest := []Pubkey{{0xd0}, {0xd1}, {0xd2}}
			table := Pubkey{0x70}
			putTable(b, table, newTableMeta(gpub(15)), dest)
			bh := b.LatestBlockhash()
			txA := v0Transfer(t, bh, 1, dest[0], table, dest)
			txB := v0Transfer(t, bh, 2, dest[0], table, dest)
			txC := v0Transfer(t, bh, 3, dest[1], table, dest)
			s.Submit(batchOf(t, pool, txA, txB, txC))
			s.Schedule()
			worker := map[[64]byte]int{}
			for s.Busy() {
				wb := <-s.Completions()
				for _, tx := range wb.txs {
					if tx.n != 3 || tx.writable&(1<<2) == 0 {
						t.Fatalf("accounts %d, writable %b: the looked-up recipient is not locked for writing", tx.n, tx.writable)
					}
					worker[*tx.view.Signature(0)] = wb.Worker()
				}
				s.Complete(wb)
			}
			sig := func(tx []byte) [64]byte { v, _ := txview.Parse(tx); return *v.Signature(0) }
			a, bb, c := worker[sig(txA)], worker[sig(txB)], worker[sig(txC)]
			if a != bb || c == a {
				t.Fatalf("workers: A %d, B %d (same recipient), C %d", a, bb, c)
			}
			drain(t, s)
			if st := s.Stats(); st.Outcomes[packet.OutcomeExecutedOK] != 3 {
				t.Fatalf("outcomes %v", st.Outcomes)
			}
		})
	}
}

// TestGenesisTable: a new ledger's lookup table holds the genesis
// accounts' addresses, usable from slot 1, under the derived authority.
func TestGenesisTable(t *testing.T) {
	b := openBank(t, Config{})
	defer b.Close()
	s := newScheduler(t, SchedulerConfig{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	table, addrs := GenesisTable(testSeed)
	if len(addrs) != TableMaxAddresses || addrs[3] != gpub(3) {
		t.Fatalf("%d addresses, the fourth %x", len(addrs), addrs[3])
	}
	a, ok := b.Account(table)
	m, got, err := DecodeTable(a.Data)
	if !ok || err != nil || a.Owner != LookupTableProgram || m.Authority != txview.PublicKey(GenesisTableAuthority(testSeed)) || len(got) != 32*TableMaxAddresses {
		t.Fatalf("genesis table %+v: %+v %v", a, m, err)
	}
	var outcome packet.Outcome
	s.cfg.OnDone = func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { outcome = o }
	s.Submit(batchOf(t, pool, v0Transfer(t, b.LatestBlockhash(), 1, gpub(5), table, addrs)))
	drain(t, s)
	if outcome != packet.OutcomeExecutedOK || lamports(b, gpub(5)) != b.cfg.Genesis.withDefaults().Lamports+1_000_000 {
		t.Fatalf("v0 transfer through the genesis table: %v, recipient %d", outcome, lamports(b, gpub(5)))
	}
}

// TestLookupAdmissionRules: the rules Agave applies to a transaction's
// accounts once its lookups are resolved (runtime-transaction
// validate_account_locks, the resolved view's writability).
func TestLookupAdmissionRules(t *testing.T) {
	b := openBank(t, Config{})
	defer b.Close()
	s := newScheduler(t, SchedulerConfig{Workers: 1}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	many := make([]Pubkey, 80)
	for i := range many {
		many[i] = Pubkey{0xc0, byte(i)}
	}
	many[70] = gpub(2)                     // a payer's key
	many[71] = txview.ComputeBudgetProgram // reserved
	table := Pubkey{0x71}
	putTable(b, table, newTableMeta(gpub(15)), many)

	// Too many: 2 static keys and 63 loaded accounts lock 65.
	tooMany := func() []byte {
		ix := txview.Transfer(gpub(1), many[0], 1_000_000)
		for _, k := range many[1:63] {
			ix.Accounts = append(ix.Accounts, txview.AccountMeta{Key: k})
		}
		m := txview.Message{Version: txview.V0, Payer: gpub(1), Blockhash: bh, Instructions: []txview.Ix{ix},
			Tables: []txview.LookupTable{{Key: table, Addresses: many}}}
		tx, err := m.Sign(gkey(1))
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := txview.Parse(tx); v.NumAccounts() != 65 {
			t.Fatalf("%d accounts", v.NumAccounts())
		}
		return tx
	}()
	// Loaded twice: the lookup's index patched to the payer's own key
	// (banking does not check signatures).
	twice := v0Transfer(t, bh, 2, many[3], table, many)
	if twice[len(twice)-2] != 3 {
		t.Fatalf("the writable index is not where the test expects it: %x", twice[len(twice)-8:])
	}
	twice[len(twice)-2] = 70
	// Demoted: a reserved key loaded writable is read-only, so a
	// transfer to it fails as it does in Agave.
	reserved := v0Transfer(t, bh, 3, txview.ComputeBudgetProgram, table, many)

	var got []packet.Outcome
	s.cfg.OnDone = func(o packet.Outcome, _ int64, _ *[64]byte, _ packet.Flags) { got = append(got, o) }
	s.Submit(batchOf(t, pool, tooMany, twice, reserved))
	drain(t, s)
	want := []packet.Outcome{packet.OutcomeTooManyAccountLocks, packet.OutcomeAccountLoadedTwice, packet.OutcomeExecutedFailed}
	if !slices.Equal(got, want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if e := s.Stats().Errors; e["InstructionError(0, ReadonlyLamportChange)"] != 1 {
		t.Fatalf("errors %v", e)
	}
	checkAccounting(t, s)
}

// BenchmarkLoadLookups is admission's resolution of a v0 transfer's
// lookup: one table, one writable index. It allocates nothing once the
// scratch has grown.
func BenchmarkLoadLookups(b *testing.B) {
	bank := openBank(b, Config{})
	defer bank.Close()
	s := newScheduler(b, SchedulerConfig{Workers: 1}, bank)
	table, addrs := GenesisTable(testSeed)
	v, err := txview.Parse(v0Transfer(b, bank.LatestBlockhash(), 1, addrs[5], table, addrs))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(v.Bytes())))
	for b.Loop() {
		var fail TxErrorKind
		if s.loaded, _, fail = s.loadLookups(s.loaded[:0], v); fail != 0 || len(s.loaded) != 1 {
			b.Fatal(fail)
		}
	}
}

func TestLoadLookupsAllocs(t *testing.T) {
	bank := openBank(t, Config{})
	defer bank.Close()
	s := newScheduler(t, SchedulerConfig{Workers: 1}, bank)
	table, addrs := GenesisTable(testSeed)
	v, err := txview.Parse(v0Transfer(t, bank.LatestBlockhash(), 1, addrs[5], table, addrs))
	if err != nil {
		t.Fatal(err)
	}
	s.loaded, _, _ = s.loadLookups(s.loaded[:0], v) // grow the scratch
	if n := testing.AllocsPerRun(100, func() { s.loaded, _, _ = s.loadLookups(s.loaded[:0], v) }); n != 0 {
		t.Fatalf("%v allocations per resolution", n)
	}
}
