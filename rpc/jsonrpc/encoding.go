package jsonrpc

// MaxBase58Bytes is the most account data either server encodes in
// base58 (the encodings base58 and the legacy binary), Agave's
// MAX_BASE58_BYTES: base58 takes time quadratic in its input, so a large
// account is never encoded in it. Past it RPC refuses the call
// (getAccountInfo: "Encoded binary (base 58) data should be less than
// 128 bytes, please use Base64 encoding.") and PubSub notifies
// "error: data too large for bs58 encoding" in place of the data, as
// Agave's do (rpc.rs, check_slice_and_encoding; account-decoder,
// encode_bs58).
const MaxBase58Bytes = 128
