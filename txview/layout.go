package txview

import "encoding/binary"

// LayoutSize is the size of a Layout: the bytes a packet reserves for its
// parse result (packet.ParsedSize is the same number, and converting one
// to the other does not compile if they differ).
const LayoutSize = 24

// Layout is a View without its bytes: the offsets and counts Parse found,
// relative to the transaction's first byte, in a fixed-size array that a
// packet can hold beside its bytes without knowing this package. A Layout
// is the parse result that travels with a packet from sigverify to its
// consumers, so that a transaction is parsed once: View turns it back into
// a View over the same bytes, or over an exact copy of them (the offsets
// are relative, so a copy needs no rebasing).
//
// The zero Layout is "not parsed". Byte layout, little-endian: eight
// uint16 (message, keys, instructions, lookups offsets; instruction
// count; looked-up writable and readonly counts; transaction length),
// then version, the three header bytes, lookup count, a non-zero marker,
// two bytes zero.
type Layout [LayoutSize]byte

// Layout returns v's layout. The zero View gives the zero Layout.
func (v View) Layout() Layout {
	var l Layout
	if v.data == nil {
		return l
	}
	le := binary.LittleEndian
	le.PutUint16(l[0:], v.msgOff)
	le.PutUint16(l[2:], v.keysOff)
	le.PutUint16(l[4:], v.instrsOff)
	le.PutUint16(l[6:], v.lookupsOff)
	le.PutUint16(l[8:], v.numInstrs)
	le.PutUint16(l[10:], v.lookupWritable)
	le.PutUint16(l[12:], v.lookupReadonly)
	le.PutUint16(l[14:], uint16(len(v.data)))
	l[16] = byte(v.version)
	l[17] = v.header.NumRequiredSignatures
	l[18] = v.header.NumReadonlySignedAccounts
	l[19] = v.header.NumReadonlyUnsignedAccounts
	l[20] = v.numLookups
	l[21] = layoutMarker
	return l
}

// layoutMarker tells a Layout that Layout wrote from a zero or poisoned one.
const layoutMarker = 0x5a

// View returns the View over data that l describes, without parsing: data
// must be the bytes l was taken from, or an exact copy. It reports false,
// and returns the zero View, when l is zero (not parsed) or was not
// written by View.Layout, or when data's length is not the length l was
// taken at; a caller then parses. It does not re-check the bytes: a Layout
// put beside other bytes of the same length is the caller's bug, and the
// View's accessors may then panic (they never read outside data).
func (l Layout) View(data []byte) (View, bool) {
	le := binary.LittleEndian
	if l[21] != layoutMarker || l[22] != 0 || l[23] != 0 || int(le.Uint16(l[14:])) != len(data) || len(data) == 0 {
		return View{}, false
	}
	return View{
		data:           data,
		msgOff:         le.Uint16(l[0:]),
		keysOff:        le.Uint16(l[2:]),
		instrsOff:      le.Uint16(l[4:]),
		lookupsOff:     le.Uint16(l[6:]),
		numInstrs:      le.Uint16(l[8:]),
		lookupWritable: le.Uint16(l[10:]),
		lookupReadonly: le.Uint16(l[12:]),
		version:        Version(l[16]),
		header:         Header{NumRequiredSignatures: l[17], NumReadonlySignedAccounts: l[18], NumReadonlyUnsignedAccounts: l[19]},
		numLookups:     l[20],
	}, true
}

// Rebase returns v over data, an exact copy of v.Bytes() (a transaction
// copied out of its packet): the offsets are relative to the first byte,
// so nothing is parsed or recomputed. It reports false, and returns the
// zero View, when the lengths differ.
func (v View) Rebase(data []byte) (View, bool) {
	if len(data) != len(v.data) || v.data == nil {
		return View{}, false
	}
	v.data = data
	return v, true
}
