package quic

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/mr-tron/base58"
)

// PeerStats is what the server saw of one identified peer.
type PeerStats struct {
	// Identity is the peer's base58 identity; Staked whether its stake
	// counts (Stake lamports).
	Identity string `json:"identity"`
	Staked   bool   `json:"staked"`
	Stake    uint64 `json:"stake"`
	// Conns is the connections admitted, Streams the transactions read.
	Conns   uint64 `json:"conns"`
	Streams uint64 `json:"streams"`
}

// maxPeers bounds the peers remembered: later identities go uncounted
// here (their events are still in Counts).
const maxPeers = 4096

// peerEntry is a peer's stats as they are counted: its streams by
// atomic add, from its connections' accept loops, with no lock.
type peerEntry struct {
	PeerStats // Streams unused: streams holds it
	streams   atomic.Uint64
}

type peerStats struct {
	mu sync.Mutex
	m  map[Identity]*peerEntry
}

func (p *peerStats) init() { p.m = map[Identity]*peerEntry{} }

// connected counts e's connection for its peer, and keeps the peer's
// entry in e for received.
func (p *peerStats) connected(e *connEntry) {
	if !e.hasID {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.m[e.id]
	if ps == nil {
		if len(p.m) >= maxPeers {
			return
		}
		ps = &peerEntry{PeerStats: PeerStats{Identity: base58.Encode(e.id[:]), Staked: e.stake > 0, Stake: e.stake}}
		p.m[e.id] = ps
	}
	ps.Conns++
	e.peer = ps
}

// received counts a stream read from e's peer.
func (p *peerStats) received(e *connEntry) {
	if e.peer != nil {
		e.peer.streams.Add(1)
	}
}

// Peers returns what the server saw of each identified peer (one that
// presented a certificate), most streams first.
func (s *Server) Peers() []PeerStats {
	s.peers.mu.Lock()
	out := make([]PeerStats, 0, len(s.peers.m))
	for _, ps := range s.peers.m {
		st := ps.PeerStats
		st.Streams = ps.streams.Load()
		out = append(out, st)
	}
	s.peers.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Streams != out[j].Streams {
			return out[i].Streams > out[j].Streams
		}
		return out[i].Identity < out[j].Identity
	})
	return out
}
