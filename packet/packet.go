package packet

import (
	"net/netip"
	"time"
)

// Size is the largest datagram a packet holds: the IPv6 minimum MTU (1280)
// less the IPv6 (40) and fragment (8) headers, Solana's PACKET_DATA_SIZE.
const Size = 1232

// Flags describe a packet; they are set by the stage that learns the fact.
type Flags uint8

const (
	// FlagDiscard marks a packet that a stage has rejected; Meta.Outcome
	// says why. Later stages skip it.
	FlagDiscard Flags = 1 << iota
	// FlagForwarded marks a packet that was forwarded by another node.
	FlagForwarded
	// FlagRepair marks a repair packet.
	FlagRepair
	// FlagSimpleVote marks a simple vote transaction (Agave's rule).
	FlagSimpleVote
	// FlagFromStakedNode marks a packet from a staked peer.
	FlagFromStakedNode
	// FlagTracer marks a sampled packet whose path is traced end to end.
	FlagTracer
	// FlagQUIC marks a packet that arrived on a QUIC stream (package
	// quic) rather than as a UDP datagram.
	FlagQUIC
)

// Meta is what a packet knows about itself besides its bytes.
type Meta struct {
	// Size is the number of bytes of the datagram in the buffer.
	Size uint16
	// Flags is a set of Flag values.
	Flags Flags
	// Outcome is the terminal outcome a stage recorded when it discarded
	// the packet; OutcomeNone while the packet is alive.
	Outcome Outcome
	// Addr is the source address: the datagram's sender, or the QUIC
	// connection's peer address.
	Addr netip.AddrPort
	// RecvNanos is the receive time in nanoseconds on the process's
	// monotonic clock (see Now): for QUIC, when the stream's FIN was read.
	RecvNanos int64
	// Peer is the QUIC peer's ed25519 identity when the peer is staked
	// (FlagFromStakedNode), and Stake its stake in lamports; zero for an
	// unstaked peer and for UDP. Banking does not use them for priority
	// (nor does Agave: stake weighs admission and forwarding there).
	Peer  [32]byte
	Stake uint64
	// Parsed is the parse result of the packet's bytes, stored by the
	// stage that parsed them (sigverify) so that later stages do not
	// parse again: a txview.Layout, opaque here (offsets relative to the
	// first byte, so a copy of the bytes with its Meta needs no
	// rebasing). Zero means not parsed; Fill, SetSize and Next clear it,
	// and whoever changes the bytes otherwise must clear it too.
	Parsed Parsed
}

// ParsedSize is the size of Meta.Parsed, txview.LayoutSize.
const ParsedSize = 24

// Parsed holds a parse result for the packet's bytes (Meta.Parsed). The
// package does not read it; txview defines what it holds, and converts
// (txview.Layout(m.Parsed)).
type Parsed [ParsedSize]byte

// Packet is one datagram and its Meta. A Packet lives inside a Batch and
// is only valid while its holder owns a reference to that batch.
type Packet struct {
	Meta Meta
	buf  [Size]byte
}

// Data returns the datagram's bytes. They stay valid while the caller owns
// a reference to the packet's batch; they must not be modified unless the
// caller holds the sole reference.
func (p *Packet) Data() []byte { return p.buf[:p.Meta.Size] }

// Buffer returns the whole buffer, Size bytes, for a receiver to fill. Call
// SetSize with the number of bytes written.
func (p *Packet) Buffer() []byte { return p.buf[:] }

// SetSize records how many bytes of the buffer hold the datagram. n is
// clamped to [0, Size].
func (p *Packet) SetSize(n int) {
	if n < 0 {
		n = 0
	} else if n > Size {
		n = Size
	}
	p.Meta.Size = uint16(n)
	p.Meta.Parsed = Parsed{}
}

// Fill copies b into the packet and sets its size. It reports false, and
// leaves the packet unchanged, when b is longer than Size.
func (p *Packet) Fill(b []byte) bool {
	if len(b) > Size {
		return false
	}
	p.Meta.Size = uint16(copy(p.buf[:], b))
	p.Meta.Parsed = Parsed{}
	return true
}

// Discard marks the packet discarded with outcome o. The first outcome
// recorded wins: discarding an already discarded packet changes nothing,
// so a packet is counted in exactly one outcome.
func (p *Packet) Discard(o Outcome) {
	if p.Meta.Flags&FlagDiscard != 0 {
		return
	}
	p.Meta.Flags |= FlagDiscard
	p.Meta.Outcome = o
}

// Discarded reports whether a stage has discarded the packet.
func (p *Packet) Discarded() bool { return p.Meta.Flags&FlagDiscard != 0 }

// Has reports whether every flag in f is set.
func (p *Packet) Has(f Flags) bool { return p.Meta.Flags&f == f }

var epoch = time.Now()

// Now returns nanoseconds since process start on the monotonic clock: the
// unit of Meta.RecvNanos.
func Now() int64 { return int64(time.Since(epoch)) }

// Time converts a Now value to wall-clock time.
func Time(nanos int64) time.Time { return epoch.Add(time.Duration(nanos)) }
