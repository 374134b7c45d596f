package bank_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"filippo.io/edwards25519"
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
)

func b58(t testing.TB, s string) banking.Pubkey {
	t.Helper()
	b, err := base58.Decode(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("%s: %v", s, err)
	}
	return banking.Pubkey(b)
}

func TestLookupTableProgramAddress(t *testing.T) {
	if got := base58.Encode(banking.LookupTableProgram[:]); got != "AddressLookupTab1e1111111111111111111111111" {
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
		got, err := bank.CreateProgramAddress(&prog, c.seeds...)
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
		_, err := bank.CreateProgramAddress(&banking.LookupTableProgram, seed)
		var k banking.Pubkey
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
	b.Write(banking.LookupTableProgram[:])
	b.WriteString(bank.PDAMarker)
	h := sha256Sum(b.Bytes())
	return h[:]
}

func TestLookupTableAddress(t *testing.T) {
	auth := banktest.Pub(0)
	k, bump := bank.LookupTableAddress(auth, 7)
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], 7)
	again, err := bank.CreateProgramAddress(&banking.LookupTableProgram, auth[:], s[:], []byte{bump})
	if err != nil || again != k {
		t.Fatalf("bump %d does not recreate %x: %v", bump, k, err)
	}
	for b := int(bump) + 1; b <= 255; b++ {
		if _, err := bank.CreateProgramAddress(&banking.LookupTableProgram, auth[:], s[:], []byte{byte(b)}); !errors.Is(err, bank.ErrOnCurve) {
			t.Fatalf("bump %d above the found %d is off the curve", b, bump)
		}
	}
}

func TestTableLayout(t *testing.T) {
	auth := banking.Pubkey{9, 8, 7}
	m := bank.NewTableMeta(auth)
	m.LastExtendedSlot, m.LastExtendedStart = 0x0102, 3
	d := banktest.TableData(m, 1)
	// Solana's bincode: tag 1, deactivation slot, last extended slot, its
	// start index, Some(authority), padding, zeros to 56.
	want := []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x01, 0, 0, 0, 0, 0, 0, 3, 1}
	want = append(want, auth[:]...)
	want = append(want, 0, 0)
	if !bytes.Equal(d[:bank.TableMetaSize], want) {
		t.Fatalf("meta\n got %x\nwant %x", d[:bank.TableMetaSize], want)
	}
	frozen := m
	frozen.HasAuthority, frozen.Authority = false, banking.Pubkey{}
	d2 := banktest.TableData(frozen, 0)
	if d2[21] != 0 || !bytes.Equal(d2[22:], make([]byte, bank.TableMetaSize-22)) {
		t.Fatalf("frozen meta %x", d2)
	}

	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, bank.ErrTableBadMeta},
		{"uninitialized", make([]byte, bank.TableMetaSize), bank.ErrTableUninitialized},
		{"bad tag", append([]byte{2, 0, 0, 0}, make([]byte, 52)...), bank.ErrTableBadMeta},
		{"bad option", func() []byte { x := banktest.TableData(m, 0); x[21] = 2; return x }(), bank.ErrTableBadMeta},
		{"short meta", banktest.TableData(m, 0)[:40], bank.ErrTableBadMeta},
		{"frozen, short", banktest.TableData(frozen, 0)[:24], bank.ErrTableBadAddresses},
		{"ragged addresses", append(banktest.TableData(m, 1), 0), bank.ErrTableBadAddresses},
		{"ok", banktest.TableData(m, 2), nil},
		{"frozen ok", banktest.TableData(frozen, 3), nil},
	}
	for _, c := range cases {
		got, addrs, err := bank.DecodeTable(c.data)
		if err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if err == nil && (len(addrs) != len(c.data)-bank.TableMetaSize || got.LastExtendedStart != 3) {
			t.Errorf("%s: %+v, %d address bytes", c.name, got, len(addrs))
		}
	}
}

// refDecode is a slow reference decoder of the table meta, written from
// the bincode rules with encoding/binary.Read.
func refDecode(data []byte) (bank.TableMeta, bool) {
	var m bank.TableMeta
	if len(data) < bank.TableMetaSize || (len(data)-bank.TableMetaSize)%32 != 0 {
		return m, false
	}
	r := bytes.NewReader(data[:bank.TableMetaSize])
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
	m := bank.NewTableMeta(banking.Pubkey{1})
	f.Add(banktest.TableData(m, 0))
	f.Add(banktest.TableData(m, 3))
	m.HasAuthority = false
	f.Add(banktest.TableData(m, 1))
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte(nil), data...)
		got, addrs, err := bank.DecodeTable(in)
		want, ok := refDecode(data)
		if (err == nil) != ok {
			t.Fatalf("bank.DecodeTable err %v, reference ok %v", err, ok)
		}
		if !bytes.Equal(in, data) {
			t.Fatal("bank.DecodeTable changed its input")
		}
		if err != nil {
			return
		}
		if got != want || len(addrs) != len(data)-bank.TableMetaSize {
			t.Fatalf("got %+v (%d), want %+v", got, len(addrs), want)
		}
		// Re-encoding the meta decodes to the same meta.
		bank.PutMeta(in, got)
		again, _, err := bank.DecodeTable(in)
		if err != nil || again != got {
			t.Fatalf("re-encoded: %+v, %v", again, err)
		}
	})
}

func TestTableStatus(t *testing.T) {
	const cur = 1000
	cases := []struct {
		deact     uint64
		want      bank.TableStatus
		remaining uint64
	}{
		{math.MaxUint64, bank.TableActivated, 0},
		{cur, bank.TableDeactivating, 513},
		{cur - 1, bank.TableDeactivating, 512},
		{cur - 512, bank.TableDeactivating, 1},
		{cur - 513, bank.TableDeactivated, 0},
	}
	for _, c := range cases {
		m := bank.TableMeta{DeactivationSlot: c.deact}
		if st, rem := m.Status(cur); st != c.want || rem != c.remaining {
			t.Errorf("deactivated %d: %d %d, want %d %d", c.deact, st, rem, c.want, c.remaining)
		}
	}
	m := bank.TableMeta{DeactivationSlot: math.MaxUint64, LastExtendedSlot: cur, LastExtendedStart: 2}
	if n, ok := m.ActiveLen(cur, 5); !ok || n != 2 {
		t.Fatalf("extended this slot: %d %v", n, ok)
	}
	if n, ok := m.ActiveLen(cur+1, 5); !ok || n != 5 {
		t.Fatalf("extended last slot: %d %v", n, ok)
	}
}
