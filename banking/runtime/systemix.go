package runtime

import (
	"encoding/binary"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// System instruction builders, as solana-system-interface
// instruction.rs makes them (txview.Transfer makes Transfer).

func sysData(tag uint32) []byte { return binary.LittleEndian.AppendUint32(make([]byte, 0, 64), tag) }

func appendSeed(d []byte, seed string) []byte {
	d = binary.LittleEndian.AppendUint64(d, uint64(len(seed)))
	return append(d, seed...)
}

func sysIxOf(d []byte, metas ...txview.AccountMeta) txview.Ix {
	return txview.Ix{Program: banking.SystemProgram, Data: d, Accounts: metas}
}

// CreateAccount creates to with space bytes owned by owner, funded by
// from; both sign.
func CreateAccount(from, to banking.Pubkey, lamports, space uint64, owner banking.Pubkey) txview.Ix {
	d := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(sysData(sysCreateAccount), lamports), space)
	return sysIxOf(append(d, owner[:]...), txview.AccountMeta{Key: from, Signer: true, Writable: true}, txview.AccountMeta{Key: to, Signer: true, Writable: true})
}

// CreateAccountWithSeed creates to, CreateWithSeed(base, seed, owner),
// funded by from; from and base sign.
func CreateAccountWithSeed(from, to, base banking.Pubkey, seed string, lamports, space uint64, owner banking.Pubkey) txview.Ix {
	d := appendSeed(append(sysData(sysCreateWithSeed), base[:]...), seed)
	d = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(d, lamports), space)
	metas := []txview.AccountMeta{{Key: from, Signer: true, Writable: true}, {Key: to, Writable: true}}
	if base != from {
		metas = append(metas, txview.AccountMeta{Key: base, Signer: true})
	}
	return sysIxOf(append(d, owner[:]...), metas...)
}

// Assign gives account to owner; account signs.
func Assign(account, owner banking.Pubkey) txview.Ix {
	return sysIxOf(append(sysData(sysAssign), owner[:]...), txview.AccountMeta{Key: account, Signer: true, Writable: true})
}

// Allocate gives account space bytes; account signs.
func Allocate(account banking.Pubkey, space uint64) txview.Ix {
	return sysIxOf(binary.LittleEndian.AppendUint64(sysData(sysAllocate), space), txview.AccountMeta{Key: account, Signer: true, Writable: true})
}

// AllocateWithSeed gives account, derived from base and seed, space
// bytes and owner; base signs.
func AllocateWithSeed(account, base banking.Pubkey, seed string, space uint64, owner banking.Pubkey) txview.Ix {
	d := binary.LittleEndian.AppendUint64(appendSeed(append(sysData(sysAllocateWithSeed), base[:]...), seed), space)
	return sysIxOf(append(d, owner[:]...), txview.AccountMeta{Key: account, Writable: true}, txview.AccountMeta{Key: base, Signer: true})
}

// AssignWithSeed gives account, derived from base and seed, to owner;
// base signs.
func AssignWithSeed(account, base banking.Pubkey, seed string, owner banking.Pubkey) txview.Ix {
	d := appendSeed(append(sysData(sysAssignWithSeed), base[:]...), seed)
	return sysIxOf(append(d, owner[:]...), txview.AccountMeta{Key: account, Writable: true}, txview.AccountMeta{Key: base, Signer: true})
}

// TransferWithSeed moves lamports from from, derived from base, seed and
// fromOwner, to to; base signs.
func TransferWithSeed(from, base banking.Pubkey, seed string, fromOwner, to banking.Pubkey, lamports uint64) txview.Ix {
	d := appendSeed(binary.LittleEndian.AppendUint64(sysData(sysTransferWithSeed), lamports), seed)
	return sysIxOf(append(d, fromOwner[:]...), txview.AccountMeta{Key: from, Writable: true}, txview.AccountMeta{Key: base, Signer: true}, txview.AccountMeta{Key: to, Writable: true})
}

// InitializeNonceAccount makes nonce a nonce account of authority.
func InitializeNonceAccount(nonce, authority banking.Pubkey) txview.Ix {
	return sysIxOf(append(sysData(sysInitializeNonce), authority[:]...), txview.AccountMeta{Key: nonce, Writable: true},
		txview.AccountMeta{Key: banking.SysvarRecentBlockhashes}, txview.AccountMeta{Key: banking.SysvarRent})
}

// AdvanceNonceAccount advances nonce; authority signs. A nonce
// transaction's first instruction.
func AdvanceNonceAccount(nonce, authority banking.Pubkey) txview.Ix {
	return sysIxOf(sysData(sysAdvanceNonce), txview.AccountMeta{Key: nonce, Writable: true},
		txview.AccountMeta{Key: banking.SysvarRecentBlockhashes}, txview.AccountMeta{Key: authority, Signer: true})
}

// WithdrawNonceAccount moves lamports from nonce to to; authority signs.
func WithdrawNonceAccount(nonce, authority, to banking.Pubkey, lamports uint64) txview.Ix {
	return sysIxOf(binary.LittleEndian.AppendUint64(sysData(sysWithdrawNonce), lamports), txview.AccountMeta{Key: nonce, Writable: true},
		txview.AccountMeta{Key: to, Writable: true}, txview.AccountMeta{Key: banking.SysvarRecentBlockhashes},
		txview.AccountMeta{Key: banking.SysvarRent}, txview.AccountMeta{Key: authority, Signer: true})
}

// AuthorizeNonceAccount gives nonce the authority next; authority signs.
func AuthorizeNonceAccount(nonce, authority, next banking.Pubkey) txview.Ix {
	return sysIxOf(append(sysData(sysAuthorizeNonce), next[:]...), txview.AccountMeta{Key: nonce, Writable: true}, txview.AccountMeta{Key: authority, Signer: true})
}

// UpgradeNonceAccount upgrades a legacy nonce account.
func UpgradeNonceAccount(nonce banking.Pubkey) txview.Ix {
	return sysIxOf(sysData(sysUpgradeNonce), txview.AccountMeta{Key: nonce, Writable: true})
}
