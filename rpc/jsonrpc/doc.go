// Package jsonrpc is the JSON-RPC 2.0 envelope that tpu's two
// Solana-compatible services share, the HTTP server (package rpc) and the
// websocket PubSub (rpc/pubsub): the request and response types, reading
// a request (Unmarshal, Check, Positional), building a response (Reply,
// Fail) and encoding it (Marshal), the error codes and the errors every
// server words alike, the Commitment levels a client asks for, and what
// both servers' Configs do alike: refuse a negative limit (NonNegative)
// and fill in the fields left zero (Default); and the size rule both
// apply to account data in base58 (MaxBase58Bytes).
//
// Each server keeps its own parsing of method parameters: Solana's HTTP
// and websocket servers word some of the same errors differently
// ("Invalid param: Invalid" against "Invalid Request: Invalid pubkey
// provided"), and clients and tests see both wordings.
//
// Nothing here keeps state or does I/O; every function is safe for
// concurrent use. The predeclared errors (ErrParse, ErrInvalidRequest,
// ErrMethodNotFound) are shared values: never modify one.
package jsonrpc
