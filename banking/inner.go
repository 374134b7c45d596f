package banking

// Inner is an instruction a program invoked (a cross-program
// invocation), as Agave's InnerInstruction records it in a transaction's
// meta.innerInstructions: the runtime makes them, the history keeps
// them, RPC returns them.
type Inner struct {
	// Outer is the index of the top-level instruction that invoked it.
	Outer uint8
	// StackHeight is its invoke depth: 2 for a call from a top-level
	// instruction (tpu's programs call no deeper).
	StackHeight uint8
	// Program is the invoked program's account index in the transaction.
	Program uint8
	// Failed: it returned the transaction's error, so its logs say
	// "failed" (Agave's record has no such field; its logs do).
	Failed bool
	// Accounts are its accounts' indexes in the transaction.
	Accounts []byte
	// Data is its instruction data.
	Data []byte
}
