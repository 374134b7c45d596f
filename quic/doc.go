// Package quic is tpu's QUIC TPU ingress: the protocol real Solana senders
// speak to a leader (Agave's and Firedancer's), with Agave 4.x's
// stake-weighted admission and QoS.
//
// The protocol: QUIC v1, TLS 1.3 with X25519, ALPN "solana-tpu"
// (refused otherwise). Each peer presents a self-signed certificate of
// its ed25519 identity (Certificate); the server takes the identity only
// when exactly one certificate is presented (PeerIdentity), and a peer
// with none, or with no stake, is unstaked. One transaction per
// client-initiated unidirectional stream, written and FINed; a stream's
// receive window is packet.Size (1232 bytes), a connection's 8 MiB. A
// stream over 1232 bytes, or empty, closes its connection with
// application error 5 (invalid_stream); a stream that has not FINed 2 s
// after its accept is cancelled. No bidirectional streams, no datagrams,
// no 0-RTT, no path migration: quic-go, which this package uses, has no
// switch for it, so the server's socket drops a 1-RTT packet from an
// address no connection was admitted (or is handshaking) from, and
// counts it (path.go, EventPathRefused), as Agave's quinn does with
// migration disabled.
//
// Admission (Limits, Agave 4.x's numbers): new connections per IP and
// overall are rate-limited before the handshake (refused: conn_refused);
// an admitted connection lands in the staked or the unstaked table, each
// bounded with per-peer limits, closed with Agave's codes (1 dropped,
// 2 disallowed, 4 too_many) when over. Streams: a connection's
// concurrent streams settle at its limit (128 unstaked, more with stake)
// by withholding stream credit (Config.RequireStreamCreditRelease: the
// first streams' credit is kept), and its rate by delaying the accept of
// its next stream: quic-go grants no new stream credit until a stream is
// accepted, read and released. Credit goes back in batches, or after
// creditHold (credit.go), each release costing a packet. Nothing resets
// a well-behaved client's stream.
//
// Into the pipeline: each connection's accept loop reads the streams it
// accepts itself, handing one that is not whole within inlineWait to a
// shared reader goroutine (reader.go). Streams are read straight into
// pooled packet buffers of a shared batch (the assembler, assemble.go);
// a batch goes to Config.Deliver when full or Coalesce after its first
// packet. Each
// packet's Meta carries packet.FlagQUIC, the peer's address, the receive
// time of the FIN, and for a staked peer FlagFromStakedNode, its
// identity and stake.
//
// Accounting: every stream the server accepts ends in exactly one stream
// event (Counts.StreamsAccepted = received + too_large + empty + timeout +
// reset + lost); streams a client opened but the server never accepted
// (its connection closed first) are not seen by the application, and are
// the client's to count as failed sends.
package quic
