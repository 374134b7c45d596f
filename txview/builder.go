package txview

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
)

// The builder makes and signs transactions for tests and load generation.
// It is not on the hot path: it allocates freely.

// AccountMeta names an account an instruction uses and how.
type AccountMeta struct {
	Key      [KeySize]byte
	Signer   bool
	Writable bool
}

// Ix is an instruction to compile into a message: a program, the accounts
// it uses, and its data.
type Ix struct {
	Program  [KeySize]byte
	Accounts []AccountMeta
	Data     []byte
}

// LookupTable is an address lookup table a v0 message may load accounts
// from: its address and its contents, in order.
type LookupTable struct {
	Key       [KeySize]byte
	Addresses [][KeySize]byte
}

// Message describes a transaction to build.
type Message struct {
	// Version is Legacy or V0.
	Version Version
	// Payer is the fee payer: static key 0, a writable signer.
	Payer [KeySize]byte
	// Blockhash is the recent blockhash.
	Blockhash [KeySize]byte
	// Instructions, in order.
	Instructions []Ix
	// Tables, for V0 only: a non-signer account that is not invoked as a
	// program and is found in a table is loaded through a lookup instead
	// of being a static key.
	Tables []LookupTable
}

// Builder failures.
var (
	ErrMissingSigner = errors.New("txview: no private key for a required signer")
	ErrTooLarge      = errors.New("txview: transaction larger than a packet")
	ErrLegacyLookups = errors.New("txview: lookup tables need a v0 message")
	ErrTooManyKeys   = errors.New("txview: too many accounts for a message")
	ErrIndexTooLarge = errors.New("txview: lookup index beyond 255")
)

type keyMeta struct {
	signer, writable, invoked bool
}

// Compile serializes the message: the bytes that signatures sign. It
// orders static keys as Solana does: writable signers (the payer first),
// readonly signers, writable non-signers, readonly non-signers, each group
// in order of first appearance.
func (m *Message) Compile() ([]byte, error) {
	if m.Version == Legacy && len(m.Tables) > 0 {
		return nil, ErrLegacyLookups
	}
	var order [][KeySize]byte
	metas := map[[KeySize]byte]*keyMeta{}
	add := func(k [KeySize]byte, signer, writable, invoked bool) {
		km, ok := metas[k]
		if !ok {
			km = &keyMeta{}
			metas[k] = km
			order = append(order, k)
		}
		km.signer = km.signer || signer
		km.writable = km.writable || writable
		km.invoked = km.invoked || invoked
	}
	add(m.Payer, true, true, false)
	for _, in := range m.Instructions {
		add(in.Program, false, false, true)
		for _, a := range in.Accounts {
			add(a.Key, a.Signer, a.Writable, false)
		}
	}

	// Accounts that lookups will load (v0): per table, writable then
	// readonly indexes.
	type loaded struct {
		table    int
		index    byte
		writable bool
	}
	fromTable := map[[KeySize]byte]loaded{}
	if m.Version == V0 {
		for _, k := range order {
			km := metas[k]
			if km.signer || km.invoked {
				continue
			}
		tables:
			for ti, t := range m.Tables {
				for ai, a := range t.Addresses {
					if a == k {
						if ai > 255 {
							return nil, ErrIndexTooLarge
						}
						fromTable[k] = loaded{table: ti, index: byte(ai), writable: km.writable}
						break tables
					}
				}
			}
		}
	}

	var static [][KeySize]byte
	group := func(signer, writable bool) {
		for _, k := range order {
			km := metas[k]
			if _, ok := fromTable[k]; ok {
				continue
			}
			if km.signer == signer && km.writable == writable {
				static = append(static, k)
			}
		}
	}
	group(true, true)
	group(true, false)
	group(false, true)
	group(false, false)
	var h Header
	for _, k := range static {
		km := metas[k]
		if km.signer {
			h.NumRequiredSignatures++
			if !km.writable {
				h.NumReadonlySignedAccounts++
			}
		} else if !km.writable {
			h.NumReadonlyUnsignedAccounts++
		}
	}
	if len(static) > MaxStaticKeys {
		return nil, ErrTooManyKeys
	}

	// Account indexes: static keys, then every table's writable loads,
	// then every table's readonly loads.
	index := map[[KeySize]byte]int{}
	for i, k := range static {
		index[k] = i
	}
	type lookupIdx struct{ w, r []byte }
	lookups := make([]lookupIdx, len(m.Tables))
	var loadedKeys [2][][KeySize]byte // [0] writable, [1] readonly, in index order
	for ti := range m.Tables {
		for _, k := range order {
			l, ok := fromTable[k]
			if !ok || l.table != ti {
				continue
			}
			if l.writable {
				lookups[ti].w = append(lookups[ti].w, l.index)
				loadedKeys[0] = append(loadedKeys[0], k)
			} else {
				lookups[ti].r = append(lookups[ti].r, l.index)
				loadedKeys[1] = append(loadedKeys[1], k)
			}
		}
	}
	next := len(static)
	for _, ks := range loadedKeys {
		for _, k := range ks {
			index[k] = next
			next++
		}
	}
	if next > MaxAccounts {
		return nil, ErrTooManyKeys
	}
	if len(m.Instructions) > MaxInstructions {
		return nil, ErrTooManyInstructions
	}

	var b []byte
	if m.Version == V0 {
		b = append(b, 0x80)
	}
	b = append(b, h.NumRequiredSignatures, h.NumReadonlySignedAccounts, h.NumReadonlyUnsignedAccounts)
	b = AppendCompactU16(b, uint16(len(static)))
	for _, k := range static {
		b = append(b, k[:]...)
	}
	b = append(b, m.Blockhash[:]...)
	b = AppendCompactU16(b, uint16(len(m.Instructions)))
	for _, in := range m.Instructions {
		b = append(b, byte(index[in.Program]))
		b = AppendCompactU16(b, uint16(len(in.Accounts)))
		for _, a := range in.Accounts {
			b = append(b, byte(index[a.Key]))
		}
		b = AppendCompactU16(b, uint16(len(in.Data)))
		b = append(b, in.Data...)
	}
	if m.Version == V0 {
		n := 0
		for _, l := range lookups {
			if len(l.w)+len(l.r) > 0 {
				n++
			}
		}
		b = AppendCompactU16(b, uint16(n))
		for ti, l := range lookups {
			if len(l.w)+len(l.r) == 0 {
				continue // a table nothing was loaded from is left out
			}
			b = append(b, m.Tables[ti].Key[:]...)
			b = AppendCompactU16(b, uint16(len(l.w)))
			b = append(b, l.w...)
			b = AppendCompactU16(b, uint16(len(l.r)))
			b = append(b, l.r...)
		}
	}
	return b, nil
}

// Sign compiles the message and signs it with the keys of its required
// signers, returning the wire transaction. Keys may be given in any order;
// extra keys are ignored.
func (m *Message) Sign(keys ...ed25519.PrivateKey) ([]byte, error) {
	msg, err := m.Compile()
	if err != nil {
		return nil, err
	}
	return SignMessage(msg, keys...)
}

// SignMessage signs a compiled message with the keys of its required
// signers and returns the wire transaction.
func SignMessage(msg []byte, keys ...ed25519.PrivateKey) ([]byte, error) {
	off := 0
	if len(msg) > 0 && msg[0]&0x80 != 0 {
		off = 1
	}
	if len(msg) < off+4 {
		return nil, ErrTruncated
	}
	ns := int(msg[off])
	nk, n, err := DecodeCompactU16(msg[off+3:])
	if err != nil {
		return nil, err
	}
	keysAt := off + 3 + n
	if int(nk) < ns || len(msg) < keysAt+ns*KeySize {
		return nil, ErrTruncated
	}
	tx := AppendCompactU16(make([]byte, 0, 1+ns*SignatureSize+len(msg)), uint16(ns))
	for i := 0; i < ns; i++ {
		want := msg[keysAt+i*KeySize : keysAt+(i+1)*KeySize]
		var key ed25519.PrivateKey
		for _, k := range keys {
			if pub, ok := k.Public().(ed25519.PublicKey); ok && string(pub) == string(want) {
				key = k
				break
			}
		}
		if key == nil {
			return nil, fmt.Errorf("%w: signer %d", ErrMissingSigner, i)
		}
		tx = append(tx, ed25519.Sign(key, msg)...)
	}
	tx = append(tx, msg...)
	if len(tx) > PacketSize {
		return nil, ErrTooLarge
	}
	return tx, nil
}

// PublicKey returns the public key of k as an array.
func PublicKey(k ed25519.PrivateKey) [KeySize]byte {
	return [KeySize]byte(k[32:])
}

// Transfer is a System program transfer of lamports from one account (a
// writable signer) to another (writable).
func Transfer(from, to [KeySize]byte, lamports uint64) Ix {
	d := make([]byte, 12)
	binary.LittleEndian.PutUint32(d, 2) // SystemInstruction::Transfer
	binary.LittleEndian.PutUint64(d[4:], lamports)
	return Ix{
		Program:  SystemProgram,
		Accounts: []AccountMeta{{Key: from, Signer: true, Writable: true}, {Key: to, Writable: true}},
		Data:     d,
	}
}

// SetComputeUnitLimit asks for a compute-unit limit.
func SetComputeUnitLimit(units uint32) Ix { return budgetIx(budgetSetUnitLimit, uint64(units), 4) }

// SetComputeUnitPrice sets the compute-unit price in micro-lamports.
func SetComputeUnitPrice(microLamports uint64) Ix {
	return budgetIx(budgetSetUnitPrice, microLamports, 8)
}

// RequestHeapFrame asks for a heap frame of the given size in bytes.
func RequestHeapFrame(bytes uint32) Ix { return budgetIx(budgetRequestHeapFrame, uint64(bytes), 4) }

// SetLoadedAccountsDataSizeLimit sets the loaded accounts data size limit
// in bytes.
func SetLoadedAccountsDataSizeLimit(bytes uint32) Ix {
	return budgetIx(budgetSetLoadedDataLimit, uint64(bytes), 4)
}

func budgetIx(tag byte, val uint64, size int) Ix {
	d := make([]byte, 1+size)
	d[0] = tag
	if size == 4 {
		binary.LittleEndian.PutUint32(d[1:], uint32(val))
	} else {
		binary.LittleEndian.PutUint64(d[1:], val)
	}
	return Ix{Program: ComputeBudgetProgram, Data: d}
}

// Memo is a memo instruction: the memo program records data and does
// nothing else. Signers, if any, must sign the transaction.
func Memo(data []byte, signers ...[KeySize]byte) Ix {
	in := Ix{Program: MemoProgram, Data: data}
	for _, s := range signers {
		in.Accounts = append(in.Accounts, AccountMeta{Key: s, Signer: true})
	}
	return in
}
