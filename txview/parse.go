package txview

// Limits of the wire format. A transaction must fit in one packet; the
// counts below follow from that (Agave transaction-view).
const (
	// PacketSize is the largest transaction, Solana's PACKET_DATA_SIZE.
	PacketSize = 1232
	// SignatureSize is the size of an ed25519 signature.
	SignatureSize = 64
	// KeySize is the size of a public key, and of a blockhash.
	KeySize = 32
	// MaxSignatures is the most signatures a packet can carry: each needs
	// its 64 bytes and a 32-byte static key (1232 / 96).
	MaxSignatures = 12
	// MaxStaticKeys is the most static keys that fit in a packet (1232 / 32).
	MaxStaticKeys = 38
	// MaxLookups is the most address-table lookups in a packet.
	MaxLookups = 31
	// MaxAccounts is the most accounts, static and looked up, a
	// transaction may reference.
	MaxAccounts = 256
	// MaxInstructions is the most top-level instructions a transaction may
	// hold.
	MaxInstructions = 64

	minInstructionSize = 3           // program index, account count, data length
	minLookupSize      = KeySize + 3 // key, two counts, at least one index
)

// Parse frames and sanitizes the transaction in data, a legacy or v0
// transaction in Solana's wire format, without copying or allocating. The
// returned View borrows data: it refers into it and is valid only while
// data is (for a packet, while its holder owns a reference to the batch).
//
// Parse applies every rule of Agave's transaction-view parse and then of
// its sanitize, in Agave's order, and returns the first failure as one of
// the package's sentinel errors; a framing failure is reported before any
// sanitize failure. The zero View is returned with an error.
func Parse(data []byte) (View, error) {
	countParse()
	var v View
	n := len(data)
	if n > 0xffff {
		return v, ErrOversize // beyond what any offset here can hold
	}
	if n == 0 {
		return v, ErrTruncated
	}

	// Signatures: one byte, because 12 fits in one compact-u16 byte; a set
	// high bit (a longer encoding) is out of range too.
	ns := int(data[0])
	if ns == 0 || ns > MaxSignatures {
		return v, ErrSignatureCount
	}
	off := 1 + ns*SignatureSize

	// Message header, after the optional version prefix.
	if off >= n {
		return v, ErrTruncated
	}
	v.msgOff = uint16(off)
	if p := data[off]; p&0x80 != 0 {
		if p != 0x80 {
			return v, ErrVersion
		}
		v.version = V0
		off++
	}
	if off+3 > n {
		return v, ErrTruncated
	}
	v.header = Header{
		NumRequiredSignatures:       data[off],
		NumReadonlySignedAccounts:   data[off+1],
		NumReadonlyUnsignedAccounts: data[off+2],
	}
	off += 3

	// Static keys: one byte, 1 to 38.
	if off >= n {
		return v, ErrTruncated
	}
	nk := int(data[off])
	off++
	if nk == 0 || nk > MaxStaticKeys {
		return v, ErrStaticKeyCount
	}
	v.keysOff = uint16(off)
	off += nk*KeySize + KeySize // keys, then the recent blockhash
	if off > n {
		return v, ErrTruncated
	}

	// Instructions. The maxima gathered here let sanitize check every
	// index without a second pass over the instructions.
	ni, off, cerr := readCompactU16(data, off)
	if cerr != nil {
		return v, cerr
	}
	if ni*minInstructionSize > n-off {
		return v, ErrTruncated
	}
	v.instrsOff = uint16(off)
	v.numInstrs = uint16(ni)
	var maxProgram, maxAccount int
	minProgram := 255
	for range ni {
		if off >= n {
			return v, ErrTruncated
		}
		prog := int(data[off])
		maxProgram = max(maxProgram, prog)
		minProgram = min(minProgram, prog)
		var na, dl int
		if na, off, cerr = readCompactU16(data, off+1); cerr != nil {
			return v, cerr
		}
		if na > n-off {
			return v, ErrTruncated
		}
		for _, a := range data[off : off+na] {
			maxAccount = max(maxAccount, int(a))
		}
		off += na
		if dl, off, cerr = readCompactU16(data, off); cerr != nil {
			return v, cerr
		}
		if dl > n-off {
			return v, ErrTruncated
		}
		off += dl
	}

	// Address-table lookups, v0 only.
	emptyLookup := false
	var nw, nr int
	if v.version == V0 {
		if off >= n {
			return v, ErrTruncated
		}
		nl := int(data[off])
		off++
		if nl > MaxLookups {
			return v, ErrLookupCount
		}
		if nl*minLookupSize > n-off {
			return v, ErrTruncated
		}
		v.lookupsOff = uint16(off)
		v.numLookups = uint8(nl)
		for range nl {
			off += KeySize
			var w, r int
			if w, off, cerr = readCompactU16(data, off); cerr != nil {
				return v, cerr
			}
			if w > n-off {
				return v, ErrTruncated
			}
			off += w
			if r, off, cerr = readCompactU16(data, off); cerr != nil {
				return v, cerr
			}
			if r > n-off {
				return v, ErrTruncated
			}
			off += r
			nw += w
			nr += r
			emptyLookup = emptyLookup || w+r == 0
		}
		v.lookupWritable = uint16(nw)
		v.lookupReadonly = uint16(nr)
	}
	if off != n {
		return v, ErrTrailingBytes
	}
	v.data = data

	// Sanitize, in Agave's order.
	if n > PacketSize {
		return View{}, ErrOversize
	}
	h := v.header
	if ns != int(h.NumRequiredSignatures) {
		return View{}, ErrSignatureMismatch
	}
	if nk < ns {
		return View{}, ErrTooFewStaticKeys
	}
	if int(h.NumReadonlyUnsignedAccounts) > nk-ns {
		return View{}, ErrReadonlyUnsigned
	}
	if h.NumReadonlySignedAccounts >= h.NumRequiredSignatures {
		return View{}, ErrNoWritableFeePayer
	}
	total := nk + nw + nr
	if total > MaxAccounts {
		return View{}, ErrTooManyAccounts
	}
	if ni > MaxInstructions {
		return View{}, ErrTooManyInstructions
	}
	if ni > 0 && (maxProgram >= nk || minProgram == 0 || maxAccount >= total) {
		return View{}, v.instructionError()
	}
	if emptyLookup {
		return View{}, ErrEmptyLookup
	}
	return v, nil
}

// instructionError finds the first failing instruction check in Agave's
// order (per instruction: program index in range, program index not the
// fee payer, every account index in range). It runs only when the maxima
// gathered by Parse show that some check fails.
func (v View) instructionError() error {
	nk, total := int(v.NumStaticKeys()), v.NumAccounts()
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		if int(in.ProgramIndex) >= nk {
			return ErrProgramIndex
		}
		if in.ProgramIndex == 0 {
			return ErrProgramIsFeePayer
		}
		for _, a := range in.Accounts {
			if int(a) >= total {
				return ErrAccountIndex
			}
		}
	}
	panic("txview: instructionError called on valid instructions")
}

// readCompactU16 decodes the compact-u16 at data[off:] as Agave's
// transaction-view does inside a packet: one byte, or two bytes whose
// second byte is neither zero (non-minimal) nor continued (a value too big
// for any count in a 1232-byte packet). It returns the value and the
// offset after it, or ErrTruncated when a byte is missing and
// ErrCompactU16 for a bad encoding.
func readCompactU16(data []byte, off int) (int, int, *Error) {
	if off >= len(data) {
		return 0, off, ErrTruncated
	}
	b0 := data[off]
	if b0 < 0x80 {
		return int(b0), off + 1, nil
	}
	if off+1 >= len(data) {
		return 0, off, ErrTruncated
	}
	b1 := data[off+1]
	if b1 == 0 || b1 >= 0x80 {
		return 0, off, ErrCompactU16
	}
	return int(b0&0x7f) | int(b1)<<7, off + 2, nil
}

// DecodeCompactU16 decodes a compact-u16 (Solana's short_vec length) from
// the start of b with the general rules: one to three bytes, minimal, at
// most 0xffff. It returns the value and the number of bytes read.
func DecodeCompactU16(b []byte) (uint16, int, error) {
	var v uint32
	for i := 0; i < 3; i++ {
		if i >= len(b) {
			return 0, 0, ErrCompactU16
		}
		c := b[i]
		if i > 0 && c == 0 {
			return 0, 0, ErrCompactU16 // non-minimal: a zero continuation byte
		}
		if i == 2 && c > 3 {
			return 0, 0, ErrCompactU16 // more than 16 bits, or a fourth byte
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return uint16(v), i + 1, nil
		}
	}
	return 0, 0, ErrCompactU16
}

// AppendCompactU16 appends the minimal compact-u16 encoding of x to b.
func AppendCompactU16(b []byte, x uint16) []byte {
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}

// FirstSignature returns the first signature of the wire transaction tx
// without parsing the rest: the one that names it (its status, its
// deduplication, the RPC's transaction id). It reports false when tx has
// no signature or is too short to hold it. The result points into tx and
// is valid as long as tx is.
func FirstSignature(tx []byte) (*[SignatureSize]byte, bool) {
	n, off, err := readCompactU16(tx, 0)
	if err != nil || n == 0 || len(tx) < off+SignatureSize {
		return nil, false
	}
	return (*[SignatureSize]byte)(tx[off : off+SignatureSize]), true
}
