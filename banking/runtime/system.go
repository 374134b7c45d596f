package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"unicode/utf8"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// The System program, as Agave's programs/system/src/system_processor.rs
// and system_instruction.rs run it: every SystemInstruction (bincode, a
// u32 tag). Transfer alone, while no instruction of the transaction has
// edited an owner or data, takes the allocation-free path in runtime.go;
// every other instruction runs here over the transaction's txState.
const (
	sysCreateAccount     = 0  // { lamports: u64, space: u64, owner: Pubkey }
	sysAssign            = 1  // { owner: Pubkey }
	sysTransfer          = 2  // { lamports: u64 }
	sysCreateWithSeed    = 3  // { base: Pubkey, seed: String, lamports: u64, space: u64, owner: Pubkey }
	sysAdvanceNonce      = 4  // unit
	sysWithdrawNonce     = 5  // (u64)
	sysInitializeNonce   = 6  // (Pubkey)
	sysAuthorizeNonce    = 7  // (Pubkey)
	sysAllocate          = 8  // { space: u64 }
	sysAllocateWithSeed  = 9  // { base: Pubkey, seed: String, space: u64, owner: Pubkey }
	sysAssignWithSeed    = 10 // { base: Pubkey, seed: String, owner: Pubkey }
	sysTransferWithSeed  = 11 // { lamports: u64, from_seed: String, from_owner: Pubkey }
	sysUpgradeNonce      = 12 // unit
	maxSeedLen           = 32 // MAX_SEED_LEN
	maxPermittedDataLen  = 10 << 20
	maxDataAllocationsTx = 2 * maxPermittedDataLen // MAX_PERMITTED_ACCOUNTS_DATA_ALLOCATIONS_PER_TRANSACTION
)

// MaxPermittedDataLength is MAX_PERMITTED_DATA_LENGTH: the most data an
// account may hold (10 MiB).
const MaxPermittedDataLength = maxPermittedDataLen

// sysIx is a decoded System instruction.
type sysIx struct {
	tag             uint32
	lamports, space uint64
	owner, base     banking.Pubkey // base: the seed's base; owner: also an authority for the nonce ones
	seed            []byte
}

// decodeSystem decodes d as limited_deserialize does: bincode, fixed-width
// integers, trailing bytes allowed; a String must be UTF-8.
func decodeSystem(d []byte) (sysIx, bool) {
	r := binReader{d: d}
	ix := sysIx{tag: r.u32()}
	switch ix.tag {
	case sysCreateAccount:
		ix.lamports, ix.space, ix.owner = r.u64(), r.u64(), r.key()
	case sysAssign, sysInitializeNonce, sysAuthorizeNonce:
		ix.owner = r.key()
	case sysTransfer, sysWithdrawNonce:
		ix.lamports = r.u64()
	case sysCreateWithSeed:
		ix.base, ix.seed, ix.lamports, ix.space, ix.owner = r.key(), r.str(), r.u64(), r.u64(), r.key()
	case sysAllocate:
		ix.space = r.u64()
	case sysAllocateWithSeed:
		ix.base, ix.seed, ix.space, ix.owner = r.key(), r.str(), r.u64(), r.key()
	case sysAssignWithSeed:
		ix.base, ix.seed, ix.owner = r.key(), r.str(), r.key()
	case sysTransferWithSeed:
		ix.lamports, ix.seed, ix.owner = r.u64(), r.str(), r.key()
	case sysAdvanceNonce, sysUpgradeNonce:
	default:
		return sysIx{}, false
	}
	return ix, !r.bad
}

// binReader reads bincode fields; a read past the end sets bad.
type binReader struct {
	d   []byte
	bad bool
}

func (r *binReader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.d) {
		r.bad = true
		return nil
	}
	b := r.d[:n]
	r.d = r.d[n:]
	return b
}

func (r *binReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *binReader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *binReader) key() (k banking.Pubkey) {
	copy(k[:], r.take(32))
	return k
}

func (r *binReader) str() []byte {
	n := r.u64()
	if n > uint64(len(r.d)) {
		r.bad = true
		return nil
	}
	b := r.take(int(n))
	if !utf8.Valid(b) {
		r.bad = true
	}
	return b
}

// CreateWithSeed is Pubkey::create_with_seed: sha256(base || seed ||
// owner). A seed over 32 bytes is MaxSeedLengthExceeded, an owner that
// ends with the PDA marker IllegalOwner (the error kind; 0 for none).
func CreateWithSeed(base *banking.Pubkey, seed []byte, owner *banking.Pubkey) (banking.Pubkey, banking.InstrErrorKind) {
	if len(seed) > maxSeedLen {
		return banking.Pubkey{}, banking.InstrMaxSeedLengthExceeded
	}
	const marker = "ProgramDerivedAddress"
	if string(owner[len(owner)-len(marker):]) == marker {
		return banking.Pubkey{}, banking.InstrIllegalOwner
	}
	h := sha256.New()
	h.Write(base[:])
	h.Write(seed)
	h.Write(owner[:])
	var k banking.Pubkey
	h.Sum(k[:0])
	return k, 0
}

// sysCtx is one System instruction's execution: instruction i, in, over
// st.
type sysCtx struct {
	tx *Tx
	st *txState
	i  int
	in txview.Instruction
	// pda signs too when hasPDA: the address a calling program derived
	// (invokeSystem).
	pda    banking.Pubkey
	hasPDA bool
}

func (c *sysCtx) fail(k banking.InstrErrorKind) banking.TxError {
	return banking.InstructionError(c.i, k)
}

func (c *sysCtx) custom(code uint32) banking.TxError { return banking.CustomError(c.i, code) }

// acct returns the transaction index of instruction account j.
func (c *sysCtx) acct(j int) (int, bool) {
	if j >= len(c.in.Accounts) {
		return 0, false
	}
	return int(c.in.Accounts[j]), true
}

func (c *sysCtx) key(idx int) banking.Pubkey { return c.tx.Accounts[idx].Key() }

func (c *sysCtx) writable(idx int) bool { return c.tx.Writable&(1<<idx) != 0 }

// signs reports whether key signs the instruction: one of its accounts
// (InstructionContext::get_signers).
func (c *sysCtx) signs(key banking.Pubkey) bool {
	for _, j := range c.in.Accounts {
		if c.signer(int(j)) && c.key(int(j)) == key {
			return true
		}
	}
	return false
}

// signer reports whether transaction account idx signs the instruction.
func (c *sysCtx) signer(idx int) bool {
	return c.tx.View.IsSigner(idx) || (c.hasPDA && c.key(idx) == c.pda)
}

// setLamports is BorrowedAccount::set_lamports (SIMD-0162: no executable
// check).
func (c *sysCtx) setLamports(idx int, v uint64) banking.TxError {
	if v < c.st.bal[idx] && c.st.owner(c.tx, idx) != banking.SystemProgram {
		return c.fail(banking.InstrExternalAccountLamportSpend)
	}
	if !c.writable(idx) {
		return c.fail(banking.InstrReadonlyLamportChange)
	}
	c.st.bal[idx] = v
	return banking.TxError{}
}

func (c *sysCtx) subLamports(idx int, v uint64) banking.TxError {
	if v > c.st.bal[idx] {
		return c.fail(banking.InstrInsufficientFunds)
	}
	return c.setLamports(idx, c.st.bal[idx]-v)
}

func (c *sysCtx) addLamports(idx int, v uint64) banking.TxError {
	if c.st.bal[idx]+v < v {
		return c.fail(banking.InstrArithmeticOverflow)
	}
	return c.setLamports(idx, c.st.bal[idx]+v)
}

// dataChangeable is BorrowedAccount::can_data_be_changed.
func (c *sysCtx) dataChangeable(idx int) banking.TxError {
	if !c.writable(idx) {
		return c.fail(banking.InstrReadonlyDataModified)
	}
	if c.st.owner(c.tx, idx) != banking.SystemProgram {
		return c.fail(banking.InstrExternalAccountDataModified)
	}
	return banking.TxError{}
}

// setDataLength is BorrowedAccount::set_data_length.
func (c *sysCtx) setDataLength(idx int, n uint64) banking.TxError {
	old := c.st.data(c.tx, idx)
	if n != uint64(len(old)) && c.st.owner(c.tx, idx) != banking.SystemProgram {
		return c.fail(banking.InstrAccountDataSizeChanged)
	}
	if n > maxPermittedDataLen {
		return c.fail(banking.InstrInvalidRealloc)
	}
	delta := int64(n) - int64(len(old))
	if c.st.resized+delta > maxDataAllocationsTx {
		return c.fail(banking.InstrMaxAccountsDataAllocations)
	}
	if e := c.dataChangeable(idx); e.IsErr() {
		return e
	}
	if n == uint64(len(old)) {
		return banking.TxError{}
	}
	c.st.resized += delta
	nd := make([]byte, n)
	copy(nd, old)
	c.st.set(idx, c.st.owner(c.tx, idx), nd)
	return banking.TxError{}
}

// setOwner is BorrowedAccount::set_owner (SIMD-0162: no executable check).
func (c *sysCtx) setOwner(idx int, owner banking.Pubkey) banking.TxError {
	cur, d := c.st.owner(c.tx, idx), c.st.data(c.tx, idx)
	if cur != banking.SystemProgram || !c.writable(idx) || !zeroed(d) {
		return c.fail(banking.InstrModifiedProgramId)
	}
	if cur != owner {
		c.st.set(idx, owner, d)
	}
	return banking.TxError{}
}

func zeroed(d []byte) bool {
	for _, b := range d {
		if b != 0 {
			return false
		}
	}
	return true
}

// setNonce is BorrowedAccount::set_state of a nonce::Versions: the data
// must be changeable and hold the encoding; the rest of it is kept.
func (c *sysCtx) setNonce(idx int, n Nonce) banking.TxError {
	if e := c.dataChangeable(idx); e.IsErr() {
		return e
	}
	d := c.st.data(c.tx, idx)
	if n.size() > len(d) {
		return c.fail(banking.InstrAccountDataTooSmall)
	}
	nd := append([]byte(nil), d...)
	n.put(nd)
	c.st.set(idx, c.st.owner(c.tx, idx), nd)
	return banking.TxError{}
}

// address is the processor's Address: an account's key and, made with a
// seed, its base, which then signs for it.
type address struct {
	key     banking.Pubkey
	base    banking.Pubkey
	hasBase bool
}

func (c *sysCtx) addressSigns(a address) bool {
	if a.hasBase {
		return c.signs(a.base)
	}
	return c.signs(a.key)
}

// withSeed is Address::create with a seed: the key must be derived from
// base, seed and owner (AddressWithSeedMismatch otherwise).
func (c *sysCtx) withSeed(key banking.Pubkey, ix *sysIx) (address, banking.TxError) {
	derived, k := CreateWithSeed(&ix.base, ix.seed, &ix.owner)
	if k != 0 {
		return address{}, c.fail(k)
	}
	if derived != key {
		return address{}, c.custom(banking.CustomAddressWithSeedMismatch)
	}
	return address{key: key, base: ix.base, hasBase: true}, banking.TxError{}
}

func (c *sysCtx) allocate(idx int, a address, space uint64) banking.TxError {
	if !c.addressSigns(a) {
		return c.fail(banking.InstrMissingRequiredSignature)
	}
	if len(c.st.data(c.tx, idx)) != 0 || c.st.owner(c.tx, idx) != banking.SystemProgram {
		return c.custom(banking.CustomAccountAlreadyInUse)
	}
	if space > maxPermittedDataLen {
		return c.custom(banking.CustomInvalidAccountDataLength)
	}
	return c.setDataLength(idx, space)
}

func (c *sysCtx) assign(idx int, a address, owner banking.Pubkey) banking.TxError {
	if c.st.owner(c.tx, idx) == owner {
		return banking.TxError{}
	}
	if !c.addressSigns(a) {
		return c.fail(banking.InstrMissingRequiredSignature)
	}
	return c.setOwner(idx, owner)
}

func (c *sysCtx) allocateAndAssign(idx int, a address, space uint64, owner banking.Pubkey) banking.TxError {
	if e := c.allocate(idx, a, space); e.IsErr() {
		return e
	}
	return c.assign(idx, a, owner)
}

// transferVerified is transfer_verified, instruction accounts from and
// to given as transaction indexes.
func (c *sysCtx) transferVerified(from, to int, lamports uint64) banking.TxError {
	if len(c.st.data(c.tx, from)) != 0 {
		return c.fail(banking.InstrInvalidArgument)
	}
	if lamports > c.st.bal[from] {
		return c.custom(banking.CustomResultWithNegativeLamports)
	}
	if e := c.subLamports(from, lamports); e.IsErr() {
		return e
	}
	return c.addLamports(to, lamports)
}

func (c *sysCtx) transfer(from, to int, lamports uint64) banking.TxError {
	if !c.signer(from) {
		return c.fail(banking.InstrMissingRequiredSignature)
	}
	return c.transferVerified(from, to, lamports)
}

func (c *sysCtx) createAccount(a address, lamports, space uint64, owner banking.Pubkey) banking.TxError {
	from, _ := c.acct(0)
	to, _ := c.acct(1)
	if c.st.bal[to] > 0 {
		return c.custom(banking.CustomAccountAlreadyInUse)
	}
	if e := c.allocateAndAssign(to, a, space, owner); e.IsErr() {
		return e
	}
	return c.transfer(from, to, lamports)
}

// sysvar is get_sysvar_with_account_check: instruction account j must be
// the sysvar's address.
func (c *sysCtx) sysvar(j int, key *banking.Pubkey) banking.TxError {
	idx, ok := c.acct(j)
	if !ok {
		return c.fail(banking.InstrNotEnoughAccountKeys)
	}
	if c.key(idx) != *key {
		return c.fail(banking.InstrInvalidArgument)
	}
	return banking.TxError{}
}

// nonceOf decodes account idx's nonce (InvalidAccountData if it cannot).
func (c *sysCtx) nonceOf(idx int) (Nonce, banking.TxError) {
	n, ok := DecodeNonce(c.st.data(c.tx, idx))
	if !ok {
		return Nonce{}, c.fail(banking.InstrInvalidAccountData)
	}
	return n, banking.TxError{}
}

// systemProgram runs instruction i, a System program instruction, over
// st. It returns the units consumed (SystemUnits, whatever happens) and
// the instruction's error.
func systemProgram(tx *Tx, st *txState, i int, in txview.Instruction) (uint64, banking.TxError) {
	return SystemUnits, (&sysCtx{tx: tx, st: st, i: i, in: in}).run()
}

func (c *sysCtx) run() banking.TxError {
	ix, ok := decodeSystem(c.in.Data)
	if !ok {
		return c.fail(banking.InstrInvalidInstructionData)
	}
	// check_number_of_instruction_accounts
	need := 1
	switch ix.tag {
	case sysCreateAccount, sysCreateWithSeed, sysTransfer, sysWithdrawNonce:
		need = 2
	case sysTransferWithSeed:
		need = 3
	}
	if len(c.in.Accounts) < need {
		return c.fail(banking.InstrNotEnoughAccountKeys)
	}
	a0, _ := c.acct(0)
	switch ix.tag {
	case sysCreateAccount:
		to, _ := c.acct(1)
		return c.createAccount(address{key: c.key(to)}, ix.lamports, ix.space, ix.owner)
	case sysCreateWithSeed:
		to, _ := c.acct(1)
		a, e := c.withSeed(c.key(to), &ix)
		if e.IsErr() {
			return e
		}
		return c.createAccount(a, ix.lamports, ix.space, ix.owner)
	case sysAssign:
		return c.assign(a0, address{key: c.key(a0)}, ix.owner)
	case sysTransfer:
		to, _ := c.acct(1)
		return c.transfer(a0, to, ix.lamports)
	case sysTransferWithSeed:
		base, _ := c.acct(1)
		to, _ := c.acct(2)
		if !c.signer(base) {
			return c.fail(banking.InstrMissingRequiredSignature)
		}
		baseKey := c.key(base)
		derived, k := CreateWithSeed(&baseKey, ix.seed, &ix.owner)
		if k != 0 {
			return c.fail(k)
		}
		if c.key(a0) != derived {
			return c.custom(banking.CustomAddressWithSeedMismatch)
		}
		return c.transferVerified(a0, to, ix.lamports)
	case sysAllocate:
		return c.allocate(a0, address{key: c.key(a0)}, ix.space)
	case sysAllocateWithSeed:
		a, e := c.withSeed(c.key(a0), &ix)
		if e.IsErr() {
			return e
		}
		return c.allocateAndAssign(a0, a, ix.space, ix.owner)
	case sysAssignWithSeed:
		a, e := c.withSeed(c.key(a0), &ix)
		if e.IsErr() {
			return e
		}
		return c.assign(a0, a, ix.owner)
	case sysAdvanceNonce:
		if e := c.sysvar(1, &banking.SysvarRecentBlockhashes); e.IsErr() {
			return e
		}
		return c.advanceNonce(a0)
	case sysWithdrawNonce:
		if e := c.sysvar(2, &banking.SysvarRecentBlockhashes); e.IsErr() {
			return e
		}
		if e := c.sysvar(3, &banking.SysvarRent); e.IsErr() {
			return e
		}
		to, _ := c.acct(1)
		return c.withdrawNonce(a0, to, ix.lamports)
	case sysInitializeNonce:
		if e := c.sysvar(1, &banking.SysvarRecentBlockhashes); e.IsErr() {
			return e
		}
		if e := c.sysvar(2, &banking.SysvarRent); e.IsErr() {
			return e
		}
		return c.initializeNonce(a0, ix.owner)
	case sysAuthorizeNonce:
		return c.authorizeNonce(a0, ix.owner)
	default: // sysUpgradeNonce
		return c.upgradeNonce(a0)
	}
}
