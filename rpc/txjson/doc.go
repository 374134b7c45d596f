// Package txjson renders a wire transaction as JSON, in the shapes and
// field names of Agave's UiTransaction (transaction-status-client-types,
// the json encoding): signatures, account keys, blockhash and
// instruction data in base58, the header, the compiled instructions with
// their account indexes, and the address-table lookups.
//
// It is the one encoder of a transaction's fields: `tpu tx decode
// --json` prints a Message beside its own fields (version, message hash,
// compute budget), and getTransaction's json and jsonParsed encodings
// (package rpc) are built from it, adding what only a committed
// transaction has.
//
// Everything here reads the View and copies what it renders: the result
// does not borrow the transaction's bytes.
package txjson
