// Package txview reads Solana transactions where they landed: Parse frames
// and sanitizes the wire bytes of a legacy or v0 transaction without
// copying or allocating, and returns a View of offsets into them.
//
// # Invariants
//
//   - A View borrows the bytes it was parsed from. Every slice and array
//     pointer its accessors return points into those bytes; they are valid
//     while the bytes are (for a packet, while its holder owns a reference
//     to the batch) and must not be modified while the View is in use.
//   - A View returned with a nil error satisfies every rule of Agave's
//     transaction-view parse and sanitize, so its accessors cannot fail:
//     every count is in range and every index refers to an account.
//   - Failures are sentinel *Error values ("txview: truncated"), cheap to
//     compare; Error.Sanitize tells a framing failure from a sanitize one.
//
// The rules, in the order they are checked:
//
// Parse: 1 to 12 signatures, their bytes present; a
// version prefix, if present, is 0x80 (v0); a 3-byte header; 1 to 38 static
// keys; a recent blockhash; instructions whose counts are minimal
// compact-u16s of at most two bytes and whose bytes are present (3 bytes
// at least each); for v0 at most 31 address-table lookups, 35 bytes at least
// each; no trailing bytes.
//
// Sanitize: at most 1232 bytes; signatures == required signatures; static keys >= signatures;
// readonly unsigned accounts do not overlap the signers; readonly signed <
// signers (the fee payer is writable); at most 256 accounts in total; at
// most 64 instructions; every program index is a static key other than
// the fee payer; every account index is in range; every lookup loads at
// least one account.
//
// Where Agave and Firedancer differ, txview follows Agave: an instruction
// may list more than 255 accounts (Firedancer rejects 256; Agave's
// SIMD-0406 limit is behind a feature gate), and counts use Agave's
// two-byte compact-u16 reader.
//
// A View's Layout is its offsets without the bytes, a fixed-size array a
// packet holds beside its bytes (packet.Meta.Parsed): the parse result
// travels with the packet, and Layout.View turns it back into a View
// over the same bytes, or an exact copy, without parsing again. Built
// with -tags invariants, Parses counts the calls to Parse so that tests
// can check that a transaction is parsed once end to end.
//
// The package also computes the message hash and the compute-budget
// details of a transaction, and has a Message builder that makes and signs
// transactions for tests and load generation.
package txview
