package banking

import "github.com/tpugo/tpu/txview"

// Pubkey is an account address.
type Pubkey = [txview.KeySize]byte

// Hash is a 32-byte hash: a slot's blockhash, a transaction's recent
// blockhash.
type Hash = [32]byte

// Well-known owners.
var (
	// NativeLoader (NativeLoader1111111111111111111111111111111) owns the
	// builtin programs.
	NativeLoader = Pubkey{0x05, 0x87, 0x84, 0xbf, 0x14, 0x8b, 0xa4, 0x28, 0x2f, 0xb0, 0x12, 0x57, 0x48, 0x88, 0xa9, 0xf1, 0x53, 0xa0, 0x7d, 0xad, 0xf7, 0x65, 0xc0, 0x45, 0x5c, 0x9a, 0x97, 0x03, 0x80, 0x00, 0x00, 0x00}
	// SystemProgram owns ordinary wallet accounts.
	SystemProgram = txview.SystemProgram
)

// LookupTableProgram is the address lookup table program,
// AddressLookupTab1e1111111111111111111111111.
var LookupTableProgram = Pubkey{0x02, 0x77, 0xa6, 0xaf, 0x97, 0x33, 0x9b, 0x7a, 0xc8, 0x8d, 0x18, 0x92, 0xc9, 0x04, 0x46, 0xf5, 0x00, 0x02, 0x30, 0x92, 0x66, 0xf6, 0x2e, 0x53, 0xc1, 0x18, 0x24, 0x49, 0x82, 0x00, 0x00, 0x00}

// The precompiles: programs whose instructions check signatures over
// bytes in the transaction's instruction data (Agave
// precompiles/src/lib.rs, PRECOMPILES). Agave verifies them in the SVM
// (SIMD-0159, move_precompile_verification_to_svm): a failure is an
// InstructionError(i, Custom(code)) of a committed transaction, fee
// charged; they consume no compute units (svm/src/message_processor.rs
// process_message: process_precompile leaves compute_units_consumed at
// 0), and their signatures are paid for in the signature fee and the
// cost model, counted from the first byte of each instruction's data.
// Their accounts are native-loader executables in genesis, so a
// transaction that invokes one loads it as any builtin.
var (
	// Ed25519Program is Ed25519SigVerify111111111111111111111111111.
	Ed25519Program = txview.Ed25519Program
	// Secp256k1Program is KeccakSecp256k11111111111111111111111111111.
	Secp256k1Program = txview.Secp256k1Program
	// Secp256r1Program is Secp256r1SigVerify1111111111111111111111111
	// (SIMD-0075, feature enable_secp256r1_precompile, active on
	// mainnet). Unlike the other two it is not a builtin for the default
	// compute-unit limit (builtins-default-costs lists only those two).
	Secp256r1Program = Pubkey{0x06, 0x92, 0x0d, 0xec, 0x2f, 0xea, 0x71, 0xb5, 0xb7, 0x23, 0x81, 0x4d, 0x74, 0x2d, 0xa9, 0x03, 0x1c, 0x83, 0xe7, 0x5f, 0xdb, 0x79, 0x5d, 0x56, 0x8e, 0x75, 0x47, 0x80, 0x20, 0x00, 0x00, 0x00}
)

// The sysvars the System program's nonce instructions name as accounts
// (it reads them from the runtime, checking only the addresses).
var (
	// SysvarRecentBlockhashes is SysvarRecentB1ockHashes11111111111111111111.
	SysvarRecentBlockhashes = mustKey("SysvarRecentB1ockHashes11111111111111111111")
	// SysvarRent is SysvarRent111111111111111111111111111111111.
	SysvarRent = mustKey("SysvarRent111111111111111111111111111111111")
)

// The stake and vote programs' addresses: tpu runs neither program, but
// its genesis holds their accounts (genesis validators' stake and vote
// accounts), from which the QUIC TPU weighs its peers.
var (
	// StakeProgram is Stake11111111111111111111111111111111111111.
	StakeProgram = mustKey("Stake11111111111111111111111111111111111111")
	// VoteProgram is Vote111111111111111111111111111111111111111.
	VoteProgram = mustKey("Vote111111111111111111111111111111111111111")
)
