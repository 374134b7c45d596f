package txview

// Version is a transaction's message format.
type Version uint8

const (
	// Legacy is the original message format, without a version prefix.
	Legacy Version = iota
	// V0 is the versioned format with address-table lookups (prefix 0x80).
	V0
)

func (v Version) String() string {
	if v == V0 {
		return "v0"
	}
	return "legacy"
}

// Header is the message header: how the static keys divide into signers
// and readonly accounts.
type Header struct {
	NumRequiredSignatures       uint8
	NumReadonlySignedAccounts   uint8
	NumReadonlyUnsignedAccounts uint8
}

// View is a parsed and sanitized transaction over the bytes it was parsed
// from. It holds offsets, not copies: every slice or array pointer an
// accessor returns points into those bytes and is valid exactly as long as
// they are (for a packet, while its holder owns a reference to the batch).
// The caller must not modify the bytes while using the View.
//
// A View is a small value; copy it freely. The zero View is empty and its
// accessors must not be called.
type View struct {
	data           []byte
	msgOff         uint16
	keysOff        uint16
	instrsOff      uint16
	lookupsOff     uint16
	numInstrs      uint16
	lookupWritable uint16
	lookupReadonly uint16
	version        Version
	header         Header
	numLookups     uint8
}

// Bytes returns the whole transaction.
func (v View) Bytes() []byte { return v.data }

// Version returns the message format.
func (v View) Version() Version { return v.version }

// Header returns the message header.
func (v View) Header() Header { return v.header }

// NumSignatures returns the number of signatures (equal to the number of
// required signatures).
func (v View) NumSignatures() int { return int(v.data[0]) }

// Signature returns signature i, 0 <= i < NumSignatures. It is made by
// the holder of StaticKey(i) over Message.
func (v View) Signature(i int) *[SignatureSize]byte {
	o := 1 + i*SignatureSize
	return (*[SignatureSize]byte)(v.data[o : o+SignatureSize])
}

// Signatures returns the signatures section: NumSignatures signatures of
// 64 bytes each, back to back.
func (v View) Signatures() []byte { return v.data[1:v.msgOff] }

// Message returns the exact bytes the signatures sign: everything after
// the signatures, the version prefix included.
func (v View) Message() []byte { return v.data[v.msgOff:] }

// NumStaticKeys returns the number of static account keys.
func (v View) NumStaticKeys() int { return int(v.data[v.keysOff-1]) }

// StaticKey returns static account key i, 0 <= i < NumStaticKeys. Key 0
// is the fee payer.
func (v View) StaticKey(i int) *[KeySize]byte {
	o := int(v.keysOff) + i*KeySize
	return (*[KeySize]byte)(v.data[o : o+KeySize])
}

// StaticKeys returns the static keys section: NumStaticKeys keys of 32
// bytes each, back to back.
func (v View) StaticKeys() []byte {
	return v.data[v.keysOff : int(v.keysOff)+v.NumStaticKeys()*KeySize]
}

// FeePayer returns static key 0.
func (v View) FeePayer() *[KeySize]byte { return v.StaticKey(0) }

// RecentBlockhash returns the recent blockhash.
func (v View) RecentBlockhash() *[KeySize]byte {
	o := int(v.keysOff) + v.NumStaticKeys()*KeySize
	return (*[KeySize]byte)(v.data[o : o+KeySize])
}

// NumInstructions returns the number of top-level instructions.
func (v View) NumInstructions() int { return int(v.numInstrs) }

// NumLookups returns the number of address-table lookups (0 for legacy).
func (v View) NumLookups() int { return int(v.numLookups) }

// NumLookupWritable returns the number of accounts loaded writable from
// address tables.
func (v View) NumLookupWritable() int { return int(v.lookupWritable) }

// NumLookupReadonly returns the number of accounts loaded readonly from
// address tables.
func (v View) NumLookupReadonly() int { return int(v.lookupReadonly) }

// NumAccounts returns the number of accounts the transaction references:
// static keys plus looked-up accounts. Account indexes in instructions run
// over static keys, then looked-up writable, then looked-up readonly.
func (v View) NumAccounts() int {
	return v.NumStaticKeys() + int(v.lookupWritable) + int(v.lookupReadonly)
}

// IsSigner reports whether account index i is a signer.
func (v View) IsSigner(i int) bool { return i < int(v.header.NumRequiredSignatures) }

// IsWritable reports whether account index i (static or looked up) is
// requested writable by the message header or the lookup it came from.
// This is the request as written; the bank additionally demotes reserved
// accounts and invoked programs (Agave's resolved view does the same).
func (v View) IsWritable(i int) bool {
	h := v.header
	nk := v.NumStaticKeys()
	switch {
	case i < 0:
		return false
	case i >= nk:
		return i-nk < int(v.lookupWritable)
	case i >= int(h.NumRequiredSignatures):
		return i-int(h.NumRequiredSignatures) < nk-int(h.NumRequiredSignatures)-int(h.NumReadonlyUnsignedAccounts)
	default:
		return i < int(h.NumRequiredSignatures)-int(h.NumReadonlySignedAccounts)
	}
}

// NumWriteLocksRequested returns the number of accounts requested
// writable, before any demotion.
func (v View) NumWriteLocksRequested() int {
	h := v.header
	return v.NumStaticKeys() - int(h.NumReadonlySignedAccounts) - int(h.NumReadonlyUnsignedAccounts) + int(v.lookupWritable)
}

// Instruction is one top-level instruction. Its slices point into the
// transaction's bytes.
type Instruction struct {
	// ProgramIndex is the static key index of the program.
	ProgramIndex uint8
	// Accounts are account indexes, one byte each.
	Accounts []byte
	// Data is the instruction data.
	Data []byte
}

// Instructions returns an iterator over the instructions, decoding each
// lazily from the bytes.
func (v View) Instructions() InstructionIter {
	return InstructionIter{data: v.data, off: int(v.instrsOff), left: int(v.numInstrs)}
}

// InstructionIter walks the instructions of a View. The zero value yields
// nothing.
type InstructionIter struct {
	data []byte
	off  int
	left int
}

// Next returns the next instruction, or false after the last.
func (it *InstructionIter) Next() (Instruction, bool) {
	if it.left <= 0 {
		return Instruction{}, false
	}
	it.left--
	d, off := it.data, it.off
	in := Instruction{ProgramIndex: d[off]}
	na, off, _ := readCompactU16(d, off+1)
	in.Accounts = d[off : off+na : off+na]
	off += na
	dl, off, _ := readCompactU16(d, off)
	in.Data = d[off : off+dl : off+dl]
	it.off = off + dl
	return in, true
}

// Lookup is one address-table lookup. Its slices point into the
// transaction's bytes.
type Lookup struct {
	// Table is the address of the lookup table account.
	Table *[KeySize]byte
	// Writable and Readonly are indexes into the table, one byte each.
	Writable []byte
	Readonly []byte
}

// Lookups returns an iterator over the address-table lookups.
func (v View) Lookups() LookupIter {
	return LookupIter{data: v.data, off: int(v.lookupsOff), left: int(v.numLookups)}
}

// LookupIter walks the lookups of a View. The zero value yields nothing.
type LookupIter struct {
	data []byte
	off  int
	left int
}

// Next returns the next lookup, or false after the last.
func (it *LookupIter) Next() (Lookup, bool) {
	if it.left <= 0 {
		return Lookup{}, false
	}
	it.left--
	d, off := it.data, it.off
	l := Lookup{Table: (*[KeySize]byte)(d[off : off+KeySize])}
	w, off, _ := readCompactU16(d, off+KeySize)
	l.Writable = d[off : off+w : off+w]
	off += w
	r, off, _ := readCompactU16(d, off)
	l.Readonly = d[off : off+r : off+r]
	it.off = off + r
	return l, true
}
