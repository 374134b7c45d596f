package runtime

// Memo's compute units. In Agave the SPL Memo program is an sBPF program
// (MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr, memo v3) and costs what
// its execution costs: a fixed part (entrypoint, UTF-8 check), the log of
// the memo (msg!("Memo (len {}): {:?}") formats it character by
// character, and the sol_log syscall charges max(100, length)), and per
// signer a log line whose Debug formatting of the Pubkey encodes it as
// base58 on chain, by far the largest part.
//
// The figures: the SPL Memo program measured by its maintainers against
// p-memo (solana-program/memo pull request 168, June 2025, the p-memo
// README's "CU consumption" table) with a 60-byte ASCII memo: 2,022 units
// with no signer, 13,525 with one, 25,111 with two, 36,406 with three, so
// (36,406 - 2,022) / 3 = 11,461 per signer. No public measurement
// separates the per-byte part from the fixed part; tpu charges the log
// syscall's 1 unit per byte (the least Agave charges for it) and puts the
// rest in the fixed part, so that a 60-byte memo costs exactly the
// measured figure.
const (
	memoPerSigner = 11_461
	memoPerByte   = 1
	memoBase      = 2_022 - 60*memoPerByte
)

// MemoUnits returns the compute units the memo program consumes for a
// memo of dataLen bytes with signers verified signers. Memo v1
// (Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo) ignores its accounts and
// is modelled with none.
func MemoUnits(dataLen, signers int) uint64 {
	return memoBase + memoPerByte*uint64(dataLen) + memoPerSigner*uint64(signers)
}
