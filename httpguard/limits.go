package httpguard

import "time"

// The limits tpu's HTTP servers share by default: JSON-RPC's (rpc.Config,
// where flags may change them) and the metrics server's (fixed). One
// place, so that "the same limits as RPC" stays true when one changes.
//
// Memory: a connection holds at most one request's header
// (DefaultMaxHeaderBytes, plus the 4 KiB Go's server reads beyond it)
// while it is read, so DefaultMaxConns connections hold under 18 MiB of
// headers; what their bodies and answers hold is each server's to bound.
const (
	// DefaultMaxConns caps the connections open at once (Config.MaxConns).
	DefaultMaxConns = 512
	// DefaultMaxConnsPerAddr caps those from one address
	// (Config.MaxConnsPerAddr), so that one address cannot take every
	// slot.
	DefaultMaxConnsPerAddr = 128
	// DefaultMaxHeaderBytes bounds a request's header lines
	// (http.Server.MaxHeaderBytes; Go's default is 1 MiB).
	DefaultMaxHeaderBytes = 32 << 10
	// DefaultReadHeaderTimeout bounds the time to read a request's
	// header, from its first byte: a slowloris is closed after it.
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout bounds the time to read a whole request, body
	// included: a slow body is closed after it.
	DefaultReadTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds the time from the end of a request's
	// header to the end of its response.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle this long.
	DefaultIdleTimeout = 30 * time.Second
)
