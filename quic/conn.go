package quic

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/tpugo/tpu/packet"
)

// connEntry is an admitted connection.
type connEntry struct {
	conn    *quicgo.Conn
	addr    netip.AddrPort
	id      Identity
	hasID   bool
	stake   uint64 // 0: unstaked
	seq     uint64 // admission order
	inTable bool
	peer    *peerEntry // its identity's stats; nil: none kept
}

// meta returns the Meta its packets carry.
func (e *connEntry) meta() packet.Meta {
	m := packet.Meta{Addr: e.addr, Flags: packet.FlagQUIC}
	if e.stake > 0 {
		m.Flags |= packet.FlagFromStakedNode
		m.Peer, m.Stake = e.id, e.stake
	}
	return m
}

// table holds the admitted connections: staked and unstaked, each
// bounded, with per-peer limits (Agave 4.x's connection tables).
type table struct {
	mu       sync.Mutex
	seq      uint64
	staked   map[*connEntry]struct{}
	unstaked map[*connEntry]struct{}
	perIP    map[netip.Addr]int
	perPeer  map[Identity]int
}

func (t *table) init() {
	t.staked, t.unstaked = map[*connEntry]struct{}{}, map[*connEntry]struct{}{}
	t.perIP, t.perPeer = map[netip.Addr]int{}, map[Identity]int{}
}

// admit adds e, or returns the code to close it with. A full table
// evicts (returned, to be closed with CodeDropped): the staked table its
// lowest stake if below e's (else e is admitted as unstaked), the
// unstaked table its oldest.
func (t *table) admit(e *connEntry, l Limits) (evicted *connEntry, code quicgo.ApplicationErrorCode) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.stake > 0 {
		if t.perPeer[e.id] >= l.MaxConnsPerStakedPeer {
			return nil, CodeTooMany
		}
		if len(t.staked) >= l.MaxStakedConns {
			var low *connEntry
			for c := range t.staked {
				if low == nil || c.stake < low.stake {
					low = c
				}
			}
			if low.stake < e.stake {
				t.removeLocked(low)
				evicted = low
			} else {
				e.stake = 0 // no room among the staked: admitted as unstaked
			}
		}
		if e.stake > 0 {
			t.add(e, t.staked)
			t.perPeer[e.id]++
			return evicted, 0
		}
	}
	if l.MaxUnstakedConns < 0 {
		return nil, CodeDisallowed
	}
	ip := e.addr.Addr()
	if t.perIP[ip] >= l.MaxConnsPerUnstakedIP {
		return nil, CodeTooMany
	}
	if len(t.unstaked) >= l.MaxUnstakedConns {
		var old *connEntry
		for c := range t.unstaked {
			if old == nil || c.seq < old.seq {
				old = c
			}
		}
		t.removeLocked(old)
		evicted = old
	}
	t.add(e, t.unstaked)
	t.perIP[ip]++
	return evicted, 0
}

func (t *table) add(e *connEntry, m map[*connEntry]struct{}) {
	t.seq++
	e.seq, e.inTable = t.seq, true
	m[e] = struct{}{}
}

// remove takes e out, if it is still in.
func (t *table) remove(e *connEntry) {
	t.mu.Lock()
	t.removeLocked(e)
	t.mu.Unlock()
}

func (t *table) removeLocked(e *connEntry) {
	if !e.inTable {
		return
	}
	e.inTable = false
	if _, ok := t.staked[e]; ok {
		delete(t.staked, e)
		if t.perPeer[e.id]--; t.perPeer[e.id] == 0 {
			delete(t.perPeer, e.id)
		}
		return
	}
	delete(t.unstaked, e)
	ip := e.addr.Addr()
	if t.perIP[ip]--; t.perIP[ip] == 0 {
		delete(t.perIP, ip)
	}
}

// all returns the admitted connections.
func (t *table) all() []*quicgo.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*quicgo.Conn, 0, len(t.staked)+len(t.unstaked))
	for c := range t.staked {
		out = append(out, c.conn)
	}
	for c := range t.unstaked {
		out = append(out, c.conn)
	}
	return out
}

// sizes returns the tables' sizes.
func (t *table) sizes() (staked, unstaked int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.staked), len(t.unstaked)
}

// gate rate-limits new connection attempts, per IP and overall, before
// their handshake.
type gate struct {
	mu     sync.Mutex
	perIP  map[netip.Addr]*bucket
	global bucket
	adds   int
}

// maxGateIPs bounds the per-IP buckets kept; full buckets are forgotten
// first, and past it a new IP is refused.
const maxGateIPs = 100_000

func (g *gate) init() { g.perIP = map[netip.Addr]*bucket{} }

func (g *gate) allow(a net.Addr, now time.Time, l Limits) bool {
	ua, ok := a.(*net.UDPAddr)
	if !ok {
		return false
	}
	ip := ua.AddrPort().Addr().Unmap()
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.perIP[ip]
	if b == nil {
		if g.adds++; g.adds%1024 == 0 || len(g.perIP) >= maxGateIPs {
			for k, v := range g.perIP {
				if v.full(now, l.PerIPRate, time.Minute, l.PerIPBurst) {
					delete(g.perIP, k)
				}
			}
		}
		if len(g.perIP) >= maxGateIPs {
			return false
		}
		b = &bucket{}
		g.perIP[ip] = b
	}
	// The global bucket first: an attempt it refuses costs the IP nothing.
	if !g.global.take(now, l.GlobalRate, time.Second, l.GlobalBurst) {
		return false
	}
	return b.take(now, l.PerIPRate, time.Minute, l.PerIPBurst)
}

// loadMeter counts staked streams per ThrottleWindow, for the staked
// throttle (Agave 4.x keeps an EMA over 5 ms intervals; this keeps the
// last full window and the current one). Counting takes no lock: only
// a window's roll does.
type loadMeter struct {
	mu        sync.Mutex   // a roll
	start     atomic.Int64 // the current window's start, since meterEpoch
	cur, prev atomic.Int64
}

// meterEpoch is what loadMeter's times count from (monotonic).
var meterEpoch = time.Now()

func (m *loadMeter) roll(now time.Duration) {
	if now-time.Duration(m.start.Load()) < ThrottleWindow {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := now - time.Duration(m.start.Load()); d >= ThrottleWindow {
		p := m.cur.Swap(0)
		if d >= 2*ThrottleWindow {
			p = 0
		}
		m.prev.Store(p)
		m.start.Store(int64(now))
	}
}

func (m *loadMeter) add(now time.Time) {
	m.roll(now.Sub(meterEpoch))
	m.cur.Add(1)
}

// saturated reports whether staked streams reach capacity per window.
func (m *loadMeter) saturated(now time.Time, capacity int) bool {
	m.roll(now.Sub(meterEpoch))
	return max(m.prev.Load(), m.cur.Load()) >= int64(capacity)
}
