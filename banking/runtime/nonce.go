package runtime

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/txview"
)

// Durable nonces, as solana-nonce (state.rs, versions.rs) lays them out
// and Agave's runtime checks them (runtime/src/bank/check_transactions.rs,
// svm/src/transaction_processor.rs validate_transaction_nonce).
//
// A nonce account is a System account whose data is a bincode
// nonce::Versions: a u32 tag (0 Legacy, 1 Current), then a State: a u32
// tag (0 Uninitialized, 1 Initialized) and, initialized, the authority
// (32), the durable nonce (32) and the fee calculator's lamports per
// signature (u64): 80 bytes.
const (
	// NonceSize is nonce::state::State::size(): the data a nonce account
	// is created with.
	NonceSize = 80

	nonceLegacy  = 0
	nonceCurrent = 1
)

// Nonce is a decoded nonce account.
type Nonce struct {
	// Legacy: the account holds Versions::Legacy (upgradeable with
	// UpgradeNonceAccount; never usable by a nonce transaction).
	Legacy bool
	// Initialized: Authority, Durable and LamportsPerSignature are set.
	Initialized bool
	Authority   banking.Pubkey
	// Durable is the stored durable nonce: what a nonce transaction puts
	// in its recent blockhash.
	Durable              banking.Hash
	LamportsPerSignature uint64
}

// DecodeNonce decodes a nonce account's data as bincode reads it
// (trailing bytes allowed); ok false is Agave's deserialization failure
// (InvalidAccountData in the nonce instructions).
func DecodeNonce(d []byte) (n Nonce, ok bool) {
	if len(d) < 8 {
		return Nonce{}, false
	}
	ver, st := binary.LittleEndian.Uint32(d), binary.LittleEndian.Uint32(d[4:])
	if ver > nonceCurrent || st > 1 {
		return Nonce{}, false
	}
	n.Legacy = ver == nonceLegacy
	if st == 0 {
		return n, true
	}
	if len(d) < NonceSize {
		return Nonce{}, false
	}
	n.Initialized = true
	copy(n.Authority[:], d[8:40])
	copy(n.Durable[:], d[40:72])
	n.LamportsPerSignature = binary.LittleEndian.Uint64(d[72:])
	return n, true
}

// size is the bincode size of n's encoding.
func (n Nonce) size() int {
	if n.Initialized {
		return NonceSize
	}
	return 8
}

// put encodes n at the start of d, which holds at least n.size() bytes;
// the rest of d is left as it is (BorrowedAccount::set_state).
func (n Nonce) put(d []byte) {
	ver := uint32(nonceCurrent)
	if n.Legacy {
		ver = nonceLegacy
	}
	binary.LittleEndian.PutUint32(d, ver)
	if !n.Initialized {
		binary.LittleEndian.PutUint32(d[4:], 0)
		return
	}
	binary.LittleEndian.PutUint32(d[4:], 1)
	copy(d[8:], n.Authority[:])
	copy(d[40:], n.Durable[:])
	binary.LittleEndian.PutUint64(d[72:], n.LamportsPerSignature)
}

// Encode returns n's account data: NonceSize bytes (tests, genesis).
func (n Nonce) Encode() []byte {
	d := make([]byte, NonceSize)
	n.put(d)
	return d
}

// DurableNonce is DurableNonce::from_blockhash: sha256("DURABLE_NONCE" ||
// blockhash), the value a nonce advanced in a slot whose last blockhash
// is blockhash stores.
func DurableNonce(blockhash banking.Hash) banking.Hash {
	h := sha256.New()
	h.Write([]byte("DURABLE_NONCE"))
	h.Write(blockhash[:])
	var out banking.Hash
	h.Sum(out[:0])
	return out
}

// systemAdvanceNonceTag is SystemInstruction::AdvanceNonceAccount's tag.
const systemAdvanceNonceTag = 4

// NonceIndex returns the account index of v's nonce account if v is
// shaped as a nonce transaction: its first instruction is the System
// program's AdvanceNonceAccount (bincode, trailing bytes allowed) whose
// first account is a static key and writable (writable: the bank's mask
// after demotion). It is SanitizedMessage::get_durable_nonce with
// require_static_nonce_account (SIMD-0242).
func NonceIndex(v txview.View, writable uint64) (int, bool) {
	it := v.Instructions()
	in, ok := it.Next()
	if !ok || *v.StaticKey(int(in.ProgramIndex)) != txview.SystemProgram {
		return 0, false
	}
	if len(in.Data) < 4 || binary.LittleEndian.Uint32(in.Data) != systemAdvanceNonceTag || len(in.Accounts) == 0 {
		return 0, false
	}
	idx := int(in.Accounts[0])
	if idx >= v.NumStaticKeys() || writable&(1<<idx) == 0 {
		return 0, false
	}
	return idx, true
}

// CheckNonce reports whether v may run as a nonce transaction against
// nonce account a, given next, the durable nonce the working slot would
// store (DurableNonce of the bank's last blockhash): Agave's
// check_and_load_message_nonce_account. The recent blockhash must differ
// from next (a nonce advances once per blockhash); the account must be
// the System program's and hold a current, initialized nonce equal to
// the recent blockhash; and the nonce authority must sign v's first
// instruction. It returns the nonce read.
func CheckNonce(v txview.View, idx int, a *bank.Account, next banking.Hash) (Nonce, bool) {
	if banking.Hash(*v.RecentBlockhash()) == next {
		return Nonce{}, false
	}
	return LoadNonce(v, a)
}

// LoadNonce is Agave's load_message_nonce_account past get_durable_nonce:
// a, v's nonce account (NonceIndex), holds the System program's current,
// initialized nonce equal to v's recent blockhash, and its authority
// signs v's first instruction. getFeeForMessage asks only this; admission
// asks CheckNonce.
func LoadNonce(v txview.View, a *bank.Account) (Nonce, bool) {
	recent := banking.Hash(*v.RecentBlockhash())
	if a.Owner != banking.SystemProgram {
		return Nonce{}, false
	}
	n, ok := DecodeNonce(a.Data)
	if !ok || n.Legacy || !n.Initialized || n.Durable != recent {
		return Nonce{}, false
	}
	it := v.Instructions()
	in, _ := it.Next()
	for _, j := range in.Accounts {
		if v.IsSigner(int(j)) && *v.StaticKey(int(j)) == n.Authority {
			return n, true
		}
	}
	return Nonce{}, false
}

// The nonce instructions (system_instruction.rs), run by the System
// program (system.go).

// advanceNonce is system_instruction.rs advance_nonce_account.
func (c *sysCtx) advanceNonce(idx int) banking.TxError {
	if !c.writable(idx) {
		return c.fail(banking.InstrInvalidArgument)
	}
	n, e := c.nonceOf(idx)
	if e.IsErr() {
		return e
	}
	if !n.Initialized {
		return c.fail(banking.InstrInvalidAccountData)
	}
	if !c.signs(n.Authority) {
		return c.fail(banking.InstrMissingRequiredSignature)
	}
	next := DurableNonce(c.tx.Blockhash)
	if n.Durable == next {
		return c.custom(banking.CustomNonceBlockhashNotExpired)
	}
	return c.setNonce(idx, Nonce{Initialized: true, Authority: n.Authority, Durable: next, LamportsPerSignature: banking.LamportsPerSignature})
}

// withdrawNonce is withdraw_nonce_account.
func (c *sysCtx) withdrawNonce(from, to int, lamports uint64) banking.TxError {
	if !c.writable(from) {
		return c.fail(banking.InstrInvalidArgument)
	}
	n, e := c.nonceOf(from)
	if e.IsErr() {
		return e
	}
	signer := c.key(from)
	if !n.Initialized {
		if lamports > c.st.bal[from] {
			return c.fail(banking.InstrInsufficientFunds)
		}
	} else {
		if lamports == c.st.bal[from] {
			if n.Durable == DurableNonce(c.tx.Blockhash) {
				return c.custom(banking.CustomNonceBlockhashNotExpired)
			}
			if e := c.setNonce(from, Nonce{}); e.IsErr() {
				return e
			}
		} else {
			need := bank.RentExemptMinimum(len(c.st.data(c.tx, from)))
			if lamports+need < lamports || lamports+need > c.st.bal[from] {
				return c.fail(banking.InstrInsufficientFunds)
			}
		}
		signer = n.Authority
	}
	if !c.signs(signer) {
		return c.fail(banking.InstrMissingRequiredSignature)
	}
	if e := c.subLamports(from, lamports); e.IsErr() {
		return e
	}
	return c.addLamports(to, lamports)
}

// initializeNonce is initialize_nonce_account.
func (c *sysCtx) initializeNonce(idx int, authority banking.Pubkey) banking.TxError {
	if !c.writable(idx) {
		return c.fail(banking.InstrInvalidArgument)
	}
	n, e := c.nonceOf(idx)
	if e.IsErr() {
		return e
	}
	if n.Initialized {
		return c.fail(banking.InstrInvalidAccountData)
	}
	if c.st.bal[idx] < bank.RentExemptMinimum(len(c.st.data(c.tx, idx))) {
		return c.fail(banking.InstrInsufficientFunds)
	}
	return c.setNonce(idx, Nonce{Initialized: true, Authority: authority, Durable: DurableNonce(c.tx.Blockhash), LamportsPerSignature: banking.LamportsPerSignature})
}

// authorizeNonce is authorize_nonce_account (Versions::authorize keeps
// the version).
func (c *sysCtx) authorizeNonce(idx int, authority banking.Pubkey) banking.TxError {
	if !c.writable(idx) {
		return c.fail(banking.InstrInvalidArgument)
	}
	n, e := c.nonceOf(idx)
	if e.IsErr() {
		return e
	}
	if !n.Initialized {
		return c.fail(banking.InstrInvalidAccountData)
	}
	if !c.signs(n.Authority) {
		return c.fail(banking.InstrMissingRequiredSignature)
	}
	n.Authority = authority
	return c.setNonce(idx, n)
}

// upgradeNonce is the processor's UpgradeNonceAccount: a legacy,
// initialized nonce (whose stored value is a blockhash) becomes current,
// its value the durable nonce of that blockhash.
func (c *sysCtx) upgradeNonce(idx int) banking.TxError {
	if c.st.owner(c.tx, idx) != banking.SystemProgram {
		return c.fail(banking.InstrInvalidAccountOwner)
	}
	if !c.writable(idx) {
		return c.fail(banking.InstrInvalidArgument)
	}
	n, e := c.nonceOf(idx)
	if e.IsErr() {
		return e
	}
	if !n.Legacy || !n.Initialized {
		return c.fail(banking.InstrInvalidArgument)
	}
	n.Legacy, n.Durable = false, DurableNonce(n.Durable)
	return c.setNonce(idx, n)
}
