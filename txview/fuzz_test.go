package txview

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// refTx is what the reference decoder reads: everything copied out.
type refTx struct {
	sigs      [][]byte
	v0        bool
	header    [3]int
	keys      [][]byte
	blockhash []byte
	instrs    []refInstr
	lookups   []refLookup
	msgStart  int
}

type refInstr struct {
	prog     int
	accounts []byte
	data     []byte
}

type refLookup struct {
	table              []byte
	writable, readonly []byte
}

// refReader is a deliberately plain reader for the reference decoder: it
// checks every read on its own and copies what it reads.
type refReader struct {
	b   []byte
	pos int
	err error
}

func (r *refReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *refReader) byte() int {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail(ErrTruncated)
		return 0
	}
	r.pos++
	return int(r.b[r.pos-1])
}

func (r *refReader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || r.pos+n > len(r.b) {
		r.fail(ErrTruncated)
		return nil
	}
	out := append([]byte{}, r.b[r.pos:r.pos+n]...)
	r.pos += n
	return out
}

// shortVec reads a compact-u16 the way Agave reads counts inside a
// packet: at most two bytes, minimal.
func (r *refReader) shortVec() int {
	first := r.byte()
	if r.err != nil {
		return 0
	}
	if first&0x80 == 0 {
		return first
	}
	second := r.byte() // a missing byte: truncated
	if second == 0 || second&0x80 != 0 {
		r.fail(ErrCompactU16)
		return 0
	}
	return first&0x7f + second*128
}

func (r *refReader) need(n int) {
	if r.err == nil && len(r.b)-r.pos < n {
		r.fail(ErrTruncated)
	}
}

// refParse decodes and sanitizes b the slow way, rule by rule, as a
// reference for Parse.
func refParse(b []byte) (*refTx, error) {
	if len(b) > 0xffff {
		return nil, ErrOversize
	}
	r := &refReader{b: b}
	tx := &refTx{}
	n := r.byte()
	if r.err != nil {
		return nil, r.err
	}
	if n < 1 || n > 12 {
		return nil, ErrSignatureCount
	}
	for i := 0; i < n; i++ {
		tx.sigs = append(tx.sigs, r.bytes(64))
	}
	if r.err != nil {
		return nil, r.err
	}
	tx.msgStart = r.pos
	first := r.byte()
	if r.err != nil {
		return nil, r.err
	}
	if first >= 0x80 {
		if first != 0x80 {
			return nil, ErrVersion
		}
		tx.v0 = true
		first = r.byte()
	}
	tx.header = [3]int{first, r.byte(), r.byte()}
	nk := r.byte()
	if r.err != nil {
		return nil, r.err
	}
	if nk < 1 || nk > 38 {
		return nil, ErrStaticKeyCount
	}
	for i := 0; i < nk; i++ {
		tx.keys = append(tx.keys, r.bytes(32))
	}
	tx.blockhash = r.bytes(32)
	ni := r.shortVec()
	r.need(3 * ni)
	for i := 0; i < ni && r.err == nil; i++ {
		var in refInstr
		in.prog = r.byte()
		in.accounts = r.bytes(r.shortVec())
		in.data = r.bytes(r.shortVec())
		tx.instrs = append(tx.instrs, in)
	}
	if tx.v0 && r.err == nil {
		nl := r.byte()
		if r.err == nil && nl > 31 {
			return nil, ErrLookupCount
		}
		r.need(35 * nl)
		for i := 0; i < nl && r.err == nil; i++ {
			var l refLookup
			l.table = r.bytes(32)
			l.writable = r.bytes(r.shortVec())
			l.readonly = r.bytes(r.shortVec())
			tx.lookups = append(tx.lookups, l)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.pos != len(b) {
		return nil, ErrTrailingBytes
	}

	// Sanitize.
	if len(b) > 1232 {
		return nil, ErrOversize
	}
	req, roSigned, roUnsigned := tx.header[0], tx.header[1], tx.header[2]
	if len(tx.sigs) != req {
		return nil, ErrSignatureMismatch
	}
	if len(tx.keys) < len(tx.sigs) {
		return nil, ErrTooFewStaticKeys
	}
	if roUnsigned > len(tx.keys)-req {
		return nil, ErrReadonlyUnsigned
	}
	if roSigned >= req {
		return nil, ErrNoWritableFeePayer
	}
	total := len(tx.keys)
	for _, l := range tx.lookups {
		total += len(l.writable) + len(l.readonly)
	}
	if total > 256 {
		return nil, ErrTooManyAccounts
	}
	if len(tx.instrs) > 64 {
		return nil, ErrTooManyInstructions
	}
	for _, in := range tx.instrs {
		if in.prog >= len(tx.keys) {
			return nil, ErrProgramIndex
		}
		if in.prog == 0 {
			return nil, ErrProgramIsFeePayer
		}
		for _, a := range in.accounts {
			if int(a) >= total {
				return nil, ErrAccountIndex
			}
		}
	}
	for _, l := range tx.lookups {
		if len(l.writable) == 0 && len(l.readonly) == 0 {
			return nil, ErrEmptyLookup
		}
	}
	return tx, nil
}

// inside reports whether s lies within b.
func inside(b, s []byte) bool {
	if len(s) == 0 {
		return true
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(b))
}

func FuzzParse(f *testing.F) {
	for _, e := range loadCorpus(f) {
		f.Add(mustHex(f, e.Hex))
	}
	var malformed []struct {
		Hex string `json:"hex"`
	}
	readJSON(f, "solana-tx/derived_malformed.json", &malformed)
	for _, m := range malformed {
		f.Add(mustHex(f, m.Hex))
	}
	fixtures, _ := filepath.Glob(filepath.Join(filepath.Dir(conformance(f, "firedancer/README.txt")), "ballet_txn_fixtures", "*.bin"))
	for _, p := range fixtures {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Parse(b)
		ref, refErr := refParse(b)
		if !errors.Is(err, refErr) || (err == nil) != (refErr == nil) {
			t.Fatalf("Parse: %v, reference: %v", err, refErr)
		}
		if err != nil {
			return
		}
		checkAgainstRef(t, b, v, ref)
	})
}

func checkAgainstRef(t *testing.T, b []byte, v View, ref *refTx) {
	t.Helper()
	eq := func(what string, got, want []byte) {
		if string(got) != string(want) {
			t.Fatalf("%s: %x, reference %x", what, got, want)
		}
		if !inside(b, got) {
			t.Fatalf("%s: slice outside the input", what)
		}
	}
	if (v.Version() == V0) != ref.v0 || v.NumSignatures() != len(ref.sigs) || v.NumStaticKeys() != len(ref.keys) {
		t.Fatal("counts differ from the reference")
	}
	h := v.Header()
	if [3]int{int(h.NumRequiredSignatures), int(h.NumReadonlySignedAccounts), int(h.NumReadonlyUnsignedAccounts)} != ref.header {
		t.Fatal("header differs")
	}
	for i, s := range ref.sigs {
		eq("signature", v.Signature(i)[:], s)
	}
	eq("signatures", v.Signatures(), b[1:ref.msgStart])
	eq("message", v.Message(), b[ref.msgStart:])
	for i, k := range ref.keys {
		eq("key", v.StaticKey(i)[:], k)
	}
	eq("static keys", v.StaticKeys(), b[v.keysOff:int(v.keysOff)+32*len(ref.keys)])
	eq("blockhash", v.RecentBlockhash()[:], ref.blockhash)
	it := v.Instructions()
	for _, want := range ref.instrs {
		in, ok := it.Next()
		if !ok || int(in.ProgramIndex) != want.prog {
			t.Fatal("instruction differs")
		}
		eq("accounts", in.Accounts, want.accounts)
		eq("data", in.Data, want.data)
	}
	if _, ok := it.Next(); ok {
		t.Fatal("extra instruction")
	}
	lit := v.Lookups()
	total := len(ref.keys)
	for _, want := range ref.lookups {
		l, ok := lit.Next()
		if !ok {
			t.Fatal("lookup missing")
		}
		eq("table", l.Table[:], want.table)
		eq("writable", l.Writable, want.writable)
		eq("readonly", l.Readonly, want.readonly)
		total += len(want.writable) + len(want.readonly)
	}
	if _, ok := lit.Next(); ok {
		t.Fatal("extra lookup")
	}
	if v.NumAccounts() != total {
		t.Fatalf("accounts %d, reference %d", v.NumAccounts(), total)
	}
	// The derived accessors must not panic on any valid view.
	_ = v.MessageHash()
	_, _ = v.ComputeBudget()
	_ = v.IsSimpleVote()
	for i := -1; i <= total; i++ {
		_ = v.IsWritable(i)
		_ = v.IsSigner(i)
	}
}

// TestFuzzSeedsAgree runs the fuzz target's comparison over the seeds in
// the plain test run too (go test runs FuzzParse's seeds; this one also
// checks each seed's verdict class is stable under a one-byte change).
func TestFuzzSeedsAgree(t *testing.T) {
	for _, e := range loadCorpus(t) {
		b := mustHex(t, e.Hex)
		for _, cut := range []int{0, 1, len(b) / 2, len(b) - 1} {
			_, err := Parse(b[:cut])
			_, refErr := refParse(b[:cut])
			if !errors.Is(err, refErr) || (err == nil) != (refErr == nil) {
				t.Fatalf("%s cut %d: %v vs reference %v", e.ID, cut, err, refErr)
			}
		}
	}
}
