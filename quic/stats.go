package quic

import "sync/atomic"

// Event is a counted outcome of the QUIC ingress: a connection admitted,
// refused or closed, a stream received or dropped, a stream throttled.
// Every stream a client opens and tpu accepts ends in exactly one stream
// event (EventStreamReceived or a dropped one); connection events are
// counted once per connection.
type Event uint8

const (
	// EventConnAccepted: a connection finished its handshake and was
	// admitted to a connection table.
	EventConnAccepted Event = iota
	// EventConnRefused: an attempt over the per-IP or global new
	// connection rate, refused before the handshake (CONNECTION_REFUSED).
	// It counts refused Initial packets: a client that retransmits its
	// Initial before it gives up is counted again.
	EventConnRefused
	// EventALPNRefused: a handshake that did not offer ALPN solana-tpu.
	EventALPNRefused
	// EventConnTooMany: closed with CodeTooMany (4), over the per-peer
	// connection limit.
	EventConnTooMany
	// EventConnDropped: closed with CodeDropped (1), evicted from a full
	// connection table by a newer or higher-staked connection.
	EventConnDropped
	// EventConnDisallowed: closed with CodeDisallowed (2): its class is
	// admitted nowhere (Limits.MaxUnstakedConns < 0).
	EventConnDisallowed
	// EventStreamReceived: a stream read to its FIN with 1 to 1232
	// bytes: a packet handed to fetch (fetch's received counts it).
	EventStreamReceived
	// EventStreamTooLarge: a stream over 1232 bytes; the connection is
	// closed with CodeInvalidStream (5).
	EventStreamTooLarge
	// EventStreamEmpty: a stream FINed with no bytes; closed with
	// CodeInvalidStream (5), as Agave does.
	EventStreamEmpty
	// EventStreamTimeout: a stream that stalled StreamTimeout (2 s)
	// before its FIN, cancelled.
	EventStreamTimeout
	// EventStreamReset: a stream the peer reset before its FIN.
	EventStreamReset
	// EventStreamLost: a stream cut off by its connection closing (the
	// peer went away, idled out, or was closed for another stream).
	EventStreamLost
	// EventRateLimited: a stream whose accept waited for its
	// connection's next throttle window (its quota was used up).
	EventRateLimited
	// EventPathRefused: a 1-RTT packet from an address no live
	// connection was admitted from and none is handshaking from: a peer
	// that migrated (no path migration), or junk. Dropped before quic-go
	// reads it (path.go); counted per packet.
	EventPathRefused
	// NumEvents is the number of events.
	NumEvents
)

var eventNames = [NumEvents]string{
	EventConnAccepted:   "conn_accepted",
	EventConnRefused:    "conn_refused",
	EventALPNRefused:    "alpn_refused",
	EventConnTooMany:    "conn_too_many",
	EventConnDropped:    "conn_dropped",
	EventConnDisallowed: "conn_disallowed",
	EventStreamReceived: "stream_received",
	EventStreamTooLarge: "stream_too_large",
	EventStreamEmpty:    "stream_empty",
	EventStreamTimeout:  "stream_timeout",
	EventStreamReset:    "stream_reset",
	EventStreamLost:     "stream_lost",
	EventRateLimited:    "rate_limited",
	EventPathRefused:    "path_refused",
}

// String returns the event's name as metrics and summaries use it.
func (e Event) String() string {
	if e < NumEvents {
		return eventNames[e]
	}
	return "unknown"
}

// Counts is the events counted so far, indexed by Event.
type Counts [NumEvents]uint64

// StreamsAccepted returns the streams that ended in a stream event: every
// stream tpu accepted (the accounting rule: accepted = received +
// dropped).
func (c Counts) StreamsAccepted() uint64 {
	var n uint64
	for e := EventStreamReceived; e <= EventStreamLost; e++ {
		n += c[e]
	}
	return n
}

// counters are the live counts.
type counters [NumEvents]atomic.Uint64

func (c *counters) add(e Event) { c[e].Add(1) }

func (c *counters) snapshot() Counts {
	var out Counts
	for i := range c {
		out[i] = c[i].Load()
	}
	return out
}
