package runtime

import (
	"encoding/binary"
	"math"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/txview"
)

// The address lookup table program, as Agave's programs/address-lookup-
// table/src/processor.rs (the builtin, before its Core BPF migration) has
// it: instructions are a bincode ProgramInstruction (u32 tag).
const (
	altCreate     = 0 // CreateLookupTable { recent_slot: u64, bump_seed: u8 }
	altFreeze     = 1 // FreezeLookupTable
	altExtend     = 2 // ExtendLookupTable { new_addresses: Vec<Pubkey> }
	altDeactivate = 3 // DeactivateLookupTable
	altClose      = 4 // CloseLookupTable
)

// lookupTableUnits is processor.rs's DEFAULT_COMPUTE_UNITS, which
// declare_process_instruction! consumes on entry; each System program
// instruction it invokes (native_invoke) consumes SystemUnits more.
const lookupTableUnits = 750

// acctEdit is a change to an account's owner and data that an
// instruction made, applied only if the whole transaction succeeds.
type acctEdit struct {
	index int
	owner banking.Pubkey
	data  []byte
}

// txState is the scratch of one execution: balances, and the owner and
// data edits (nil until an instruction edits an account: only the lookup
// table program does).
type txState struct {
	bal     []uint64
	edits   []acctEdit
	resized int64           // data bytes allocated so far (accounts_resize_delta)
	inner   []banking.Inner // the instructions programs invoked
}

// innerList returns the recorded inner instructions (nil for none; st
// may be nil).
func (st *txState) innerList() []banking.Inner {
	if st == nil {
		return nil
	}
	return st.inner
}

// edit returns the edit of account i, or nil (st may be nil: no
// edits).
func (st *txState) edit(i int) *acctEdit {
	if st == nil {
		return nil
	}
	for j := range st.edits {
		if st.edits[j].index == i {
			return &st.edits[j]
		}
	}
	return nil
}

// owner and data return account i's as the transaction has left them so
// far.
func (st *txState) owner(tx *Tx, i int) banking.Pubkey {
	if e := st.edit(i); e != nil {
		return e.owner
	}
	return tx.Accounts[i].Owner
}

func (st *txState) data(tx *Tx, i int) []byte {
	if e := st.edit(i); e != nil {
		return e.data
	}
	return tx.Accounts[i].Data
}

// set records account i's new owner and data (data is owned by st).
func (st *txState) set(i int, owner banking.Pubkey, data []byte) {
	if e := st.edit(i); e != nil {
		e.owner, e.data = owner, data
		return
	}
	st.edits = append(st.edits, acctEdit{index: i, owner: owner, data: data})
}

// lookupTableInstruction runs instruction i, a lookup table program
// instruction, over st in working slot slot. It returns the units
// consumed and the instruction's error.
func lookupTableInstruction(tx *Tx, st *txState, slot uint64, i int, in txview.Instruction) (uint64, banking.TxError) {
	units := uint64(lookupTableUnits)
	ierr := func(k banking.InstrErrorKind) (uint64, banking.TxError) { return units, banking.InstructionError(i, k) }
	// account returns the transaction index of instruction account j.
	account := func(j int) (int, bool) {
		if j >= len(in.Accounts) {
			return 0, false
		}
		return int(in.Accounts[j]), true
	}
	d := in.Data
	if len(d) < 4 {
		return ierr(banking.InstrInvalidInstructionData)
	}
	// limited_deserialize first: malformed data fails before any account
	// is looked at. Trailing bytes are allowed.
	tag := binary.LittleEndian.Uint32(d)
	var recent uint64
	var bump byte
	var addrs []byte
	switch tag {
	case altCreate:
		if len(d) < 4+8+1 {
			return ierr(banking.InstrInvalidInstructionData)
		}
		recent, bump = binary.LittleEndian.Uint64(d[4:]), d[12]
	case altExtend:
		// Vec<Pubkey>: a u64 length, then the keys.
		if len(d) < 12 {
			return ierr(banking.InstrInvalidInstructionData)
		}
		n := binary.LittleEndian.Uint64(d[4:])
		if n > uint64(len(d)-12)/32 {
			return ierr(banking.InstrInvalidInstructionData)
		}
		addrs = d[12 : 12+n*32]
	case altFreeze, altDeactivate, altClose:
	default:
		return ierr(banking.InstrInvalidInstructionData)
	}
	table, ok := account(0)
	if !ok {
		return ierr(banking.InstrNotEnoughAccountKeys)
	}
	if tag == altCreate {
		// create_lookup_table (after relax_authority_signer_check_for_
		// lookup_table_creation: the authority need not sign).
		tableLamports, tableOwner := st.bal[table], st.owner(tx, table)
		auth, ok := account(1)
		if !ok {
			return ierr(banking.InstrNotEnoughAccountKeys)
		}
		payer, ok := account(2)
		if !ok {
			return ierr(banking.InstrNotEnoughAccountKeys)
		}
		if !tx.View.IsSigner(payer) {
			return ierr(banking.InstrMissingRequiredSignature)
		}
		if _, ok := bank.RecentSlot(slot, recent); !ok {
			return ierr(banking.InstrInvalidInstructionData) // "{} is not a recent slot"
		}
		var s [8]byte
		binary.LittleEndian.PutUint64(s[:], recent)
		authKey := tx.Accounts[auth].Key()
		derived, err := bank.CreateProgramAddress(&banking.LookupTableProgram, authKey[:], s[:], []byte{bump})
		if err != nil {
			return ierr(banking.InstrInvalidSeeds)
		}
		if tx.Accounts[table].Key() != derived {
			return ierr(banking.InstrInvalidArgument)
		}
		if tableOwner == banking.LookupTableProgram {
			return units, banking.TxError{} // already created: a no-op
		}
		// The System program's transfer, allocate and assign, invoked
		// with the payer's and the table's (PDA) signatures.
		need := bank.RentExemptMinimum(bank.TableMetaSize)
		if need > tableLamports {
			u, e := invokeSystem(tx, st, i, nil, transferData(need-tableLamports), payer, table)
			if units += u; e.IsErr() {
				return units, e
			}
		}
		tableKey := tx.Accounts[table].Key()
		u, e := invokeSystem(tx, st, i, &tableKey, binary.LittleEndian.AppendUint64([]byte{sysAllocate, 0, 0, 0}, bank.TableMetaSize), table)
		if units += u; e.IsErr() {
			return units, e
		}
		u, e = invokeSystem(tx, st, i, &tableKey, append([]byte{sysAssign, 0, 0, 0}, banking.LookupTableProgram[:]...), table)
		if units += u; e.IsErr() {
			return units, e
		}
		data := make([]byte, bank.TableMetaSize)
		bank.PutMeta(data, bank.NewTableMeta(authKey))
		st.set(table, banking.LookupTableProgram, data)
		return units, banking.TxError{}
	}

	// The other four share their opening checks: the table is the
	// program's, the authority signs.
	if st.owner(tx, table) != banking.LookupTableProgram {
		return ierr(banking.InstrInvalidAccountOwner)
	}
	auth, ok := account(1)
	if !ok {
		return ierr(banking.InstrNotEnoughAccountKeys)
	}
	if !tx.View.IsSigner(auth) {
		return ierr(banking.InstrMissingRequiredSignature)
	}
	authKey := tx.Accounts[auth].Key()
	if tag == altClose {
		recip, ok := account(2)
		if !ok {
			return ierr(banking.InstrNotEnoughAccountKeys)
		}
		if recip == table {
			return ierr(banking.InstrInvalidArgument) // "Lookup table cannot be the recipient of reclaimed lamports"
		}
	}
	data := st.data(tx, table)
	meta, have, err := bank.DecodeTable(data)
	if err != nil {
		return ierr(tableErrKind(err))
	}
	if !meta.HasAuthority {
		return ierr(banking.InstrImmutable)
	}
	if meta.Authority != authKey {
		return ierr(banking.InstrIncorrectAuthority)
	}
	switch tag {
	case altFreeze:
		if meta.DeactivationSlot != math.MaxUint64 {
			return ierr(banking.InstrInvalidArgument) // "Deactivated tables cannot be frozen"
		}
		if len(have) == 0 {
			return ierr(banking.InstrInvalidInstructionData) // "Empty lookup tables cannot be frozen"
		}
		meta.HasAuthority, meta.Authority = false, banking.Pubkey{}
		return units, writeMeta(tx, st, i, table, meta, data)

	case altDeactivate:
		if meta.DeactivationSlot != math.MaxUint64 {
			return ierr(banking.InstrInvalidArgument) // "Lookup table is already deactivated"
		}
		meta.DeactivationSlot = slot
		return units, writeMeta(tx, st, i, table, meta, data)

	case altExtend:
		if meta.DeactivationSlot != math.MaxUint64 {
			return ierr(banking.InstrInvalidArgument) // "Deactivated tables cannot be extended"
		}
		old := len(have) / 32
		if old >= bank.TableMaxAddresses {
			return ierr(banking.InstrInvalidArgument) // "Lookup table is full"
		}
		if len(addrs) == 0 {
			return ierr(banking.InstrInvalidInstructionData) // "Must extend with at least one address"
		}
		if old+len(addrs)/32 > bank.TableMaxAddresses {
			return ierr(banking.InstrInvalidInstructionData)
		}
		if slot != meta.LastExtendedSlot {
			meta.LastExtendedSlot, meta.LastExtendedStart = slot, uint8(old)
		}
		if tx.Writable&(1<<table) == 0 {
			return ierr(banking.InstrReadonlyDataModified)
		}
		nd := make([]byte, len(data)+len(addrs))
		copy(nd, data)
		copy(nd[len(data):], addrs)
		st.resized += int64(len(addrs))
		bank.PutMeta(nd, meta)
		st.set(table, banking.LookupTableProgram, nd)
		need := bank.RentExemptMinimum(len(nd))
		if need <= st.bal[table] {
			return units, banking.TxError{}
		}
		payer, ok := account(2)
		if !ok {
			return ierr(banking.InstrNotEnoughAccountKeys)
		}
		if !tx.View.IsSigner(payer) {
			return ierr(banking.InstrMissingRequiredSignature)
		}
		u, e := invokeSystem(tx, st, i, nil, transferData(need-st.bal[table]), payer, table)
		return units + u, e

	default: // altClose
		switch s, _ := meta.Status(slot); s {
		case bank.TableActivated, bank.TableDeactivating:
			return ierr(banking.InstrInvalidArgument) // "not deactivated" / "cannot be closed until it's fully deactivated"
		}
		// The recipient's checked_add_lamports, then set_lamports.
		recip, _ := account(2)
		if st.bal[recip]+st.bal[table] < st.bal[recip] {
			return ierr(banking.InstrArithmeticOverflow)
		}
		if tx.Writable&(1<<recip) == 0 {
			return ierr(banking.InstrReadonlyLamportChange)
		}
		if tx.Accounts[recip].Executable {
			return ierr(banking.InstrExecutableLamportChange)
		}
		if tx.Writable&(1<<table) == 0 {
			return ierr(banking.InstrReadonlyDataModified)
		}
		st.bal[recip] += st.bal[table]
		st.bal[table] = 0
		st.set(table, banking.LookupTableProgram, nil)
		return units, banking.TxError{}
	}
}

// writeMeta stores meta over a copy of the table's data.
func writeMeta(tx *Tx, st *txState, i, table int, meta bank.TableMeta, data []byte) banking.TxError {
	if tx.Writable&(1<<table) == 0 {
		return banking.InstructionError(i, banking.InstrReadonlyDataModified)
	}
	nd := append([]byte(nil), data...)
	bank.PutMeta(nd, meta)
	st.set(table, banking.LookupTableProgram, nd)
	return banking.TxError{}
}

// tableErrKind is the InstructionError of a DecodeTable failure.
func tableErrKind(err error) banking.InstrErrorKind {
	switch err {
	case bank.ErrTableUninitialized:
		return banking.InstrUninitializedAccount
	case bank.ErrTableBadMeta:
		return banking.InstrInvalidInstructionData
	}
	return banking.InstrInvalidAccountData
}

// invokeSystem is the lookup table program's native_invoke of a System
// program instruction (data) over accounts (transaction indexes), signed
// by the transaction's signers and pda (the table, whose address the
// program derives; nil for none). As Agave's prepare_instruction: the
// System program must be one of the transaction's accounts (else
// MissingAccount), and the call may not make an account writable that
// is not, nor signed that is not (PrivilegeEscalation); these fail before
// the call, which is then neither recorded nor charged. Otherwise the call
// is recorded as an inner instruction of instruction i, at stack height
// 2, and consumes SystemUnits whatever its outcome; its error is
// instruction i's.
func invokeSystem(tx *Tx, st *txState, i int, pda *banking.Pubkey, data []byte, accounts ...int) (uint64, banking.TxError) {
	sys := -1
	for j, a := range tx.Accounts {
		if a.Key() == banking.SystemProgram {
			sys = j
			break
		}
	}
	if sys < 0 {
		return 0, banking.InstructionError(i, banking.InstrMissingAccount)
	}
	// The callee's metas: transfer's from signs, the others' account
	// (the table) signs; every account is writable.
	for k, a := range accounts {
		signer := k == 0
		if tx.Writable&(1<<a) == 0 || (signer && !tx.View.IsSigner(a) && (pda == nil || tx.Accounts[a].Key() != *pda)) {
			return 0, banking.InstructionError(i, banking.InstrPrivilegeEscalation)
		}
	}
	ix := banking.Inner{Outer: uint8(i), StackHeight: 2, Program: uint8(sys), Data: data, Accounts: make([]byte, len(accounts))}
	for k, a := range accounts {
		ix.Accounts[k] = byte(a)
	}
	in := txview.Instruction{ProgramIndex: uint8(sys), Accounts: ix.Accounts, Data: data}
	c := sysCtx{tx: tx, st: st, i: i, in: in}
	if pda != nil {
		c.pda, c.hasPDA = *pda, true
	}
	err := c.run()
	ix.Failed = err.IsErr()
	st.inner = append(st.inner, ix)
	return SystemUnits, err
}

// transferData is SystemInstruction::Transfer's data.
func transferData(lamports uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte{sysTransfer, 0, 0, 0}, lamports)
}

// Instruction builders, as sdk address_lookup_table instruction.rs.

// CreateLookupTable returns the instruction that creates authority's
// table for RecentSlot (a slot in SlotHashes), funded by payer, and the
// table's address. The authority need not sign.
func CreateLookupTable(authority, payer banking.Pubkey, RecentSlot uint64) (txview.Ix, banking.Pubkey) {
	table, bump := bank.LookupTableAddress(authority, RecentSlot)
	d := make([]byte, 13)
	binary.LittleEndian.PutUint32(d, altCreate)
	binary.LittleEndian.PutUint64(d[4:], RecentSlot)
	d[12] = bump
	return txview.Ix{Program: banking.LookupTableProgram, Data: d, Accounts: []txview.AccountMeta{
		{Key: table, Writable: true},
		{Key: authority},
		{Key: payer, Signer: true, Writable: true},
		{Key: banking.SystemProgram},
	}}, table
}

// ExtendLookupTable returns the instruction that appends addresses to
// table; payer tops its rent up.
func ExtendLookupTable(table, authority, payer banking.Pubkey, addresses []banking.Pubkey) txview.Ix {
	d := make([]byte, 12, 12+32*len(addresses))
	binary.LittleEndian.PutUint32(d, altExtend)
	binary.LittleEndian.PutUint64(d[4:], uint64(len(addresses)))
	for _, a := range addresses {
		d = append(d, a[:]...)
	}
	return txview.Ix{Program: banking.LookupTableProgram, Data: d, Accounts: []txview.AccountMeta{
		{Key: table, Writable: true},
		{Key: authority, Signer: true},
		{Key: payer, Signer: true, Writable: true},
		{Key: banking.SystemProgram},
	}}
}

// FreezeLookupTable, DeactivateLookupTable: the instructions that freeze
// and deactivate table.
func FreezeLookupTable(table, authority banking.Pubkey) txview.Ix {
	return tableIx(altFreeze, table, authority)
}

// DeactivateLookupTable returns the instruction that deactivates table.
func DeactivateLookupTable(table, authority banking.Pubkey) txview.Ix {
	return tableIx(altDeactivate, table, authority)
}

// CloseLookupTable returns the instruction that closes a deactivated
// table and sends its lamports to recipient.
func CloseLookupTable(table, authority, recipient banking.Pubkey) txview.Ix {
	ix := tableIx(altClose, table, authority)
	ix.Accounts = append(ix.Accounts, txview.AccountMeta{Key: recipient, Writable: true})
	return ix
}

func tableIx(tag uint32, table, authority banking.Pubkey) txview.Ix {
	d := binary.LittleEndian.AppendUint32(nil, tag)
	return txview.Ix{Program: banking.LookupTableProgram, Data: d, Accounts: []txview.AccountMeta{
		{Key: table, Writable: true},
		{Key: authority, Signer: true},
	}}
}
