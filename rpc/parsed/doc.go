// Package parsed renders instructions and accounts of tpu's programs as
// Agave's jsonParsed encoding does: instructions as Agave's
// transaction-status crate parses them (parse_system.rs,
// parse_address_lookup_table.rs, the memo), accounts as its
// account-decoder does (parse_nonce.rs, parse_address_lookup_table.rs).
//
// It is pure: bytes in, values ready for encoding/json out. Data a
// parser refuses (a wrong length, an unknown tag, too few accounts) is
// reported by ok false, never by a panic: the caller then falls back as
// Agave does (an instruction partially decoded, an account's data in
// base64). The values are maps and small structs whose JSON is Agave's:
// a map's keys are written sorted, as serde_json's json! macro writes
// them.
package parsed
