package quic

import (
	"sort"
	"sync"

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

type peerStats struct {
	mu sync.Mutex
	m  map[Identity]*PeerStats
}

func (p *peerStats) init() { p.m = map[Identity]*PeerStats{} }

func (p *peerStats) get(e *connEntry) *PeerStats {
	ps := p.m[e.id]
	if ps == nil && len(p.m) < maxPeers {
		ps = &PeerStats{Identity: base58.Encode(e.id[:]), Staked: e.stake > 0, Stake: e.stake}
		p.m[e.id] = ps
	}
	return ps
}

func (p *peerStats) connected(e *connEntry) {
	if !e.hasID {
		return
	}
	p.mu.Lock()
	if ps := p.get(e); ps != nil {
		ps.Conns++
	}
	p.mu.Unlock()
}

func (p *peerStats) received(e *connEntry) {
	if !e.hasID {
		return
	}
	p.mu.Lock()
	if ps := p.get(e); ps != nil {
		ps.Streams++
	}
	p.mu.Unlock()
}

// Peers returns what the server saw of each identified peer (one that
// presented a certificate), most streams first.
func (s *Server) Peers() []PeerStats {
	s.peers.mu.Lock()
	out := make([]PeerStats, 0, len(s.peers.m))
	for _, ps := range s.peers.m {
		out = append(out, *ps)
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
