package quic

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/mr-tron/base58"
)

// The admission and QoS numbers follow Agave 4.x's streamer
// (streamer/src/nonblocking/quic.rs, swqos.rs, stream_throttle.rs as of
// v4.0); each field says where its default comes from.
type Limits struct {
	// MaxStakedConns and MaxUnstakedConns size the two connection tables
	// (Agave 4.x: 2,000 each). A negative MaxUnstakedConns admits no
	// unstaked peer (closed with CodeDisallowed).
	MaxStakedConns, MaxUnstakedConns int
	// MaxConnsPerUnstakedIP and MaxConnsPerStakedPeer bound a peer's
	// connections (Agave 4.x: 8 per unstaked IP, 16 per staked identity);
	// one more closes the newest with CodeTooMany.
	MaxConnsPerUnstakedIP, MaxConnsPerStakedPeer int
	// PerIPRate and PerIPBurst are the new connections an IP may open, per
	// minute with a burst (Agave 4.x: 8 a minute, burst 80); GlobalRate
	// and GlobalBurst all IPs together, per second (2,500, burst 1,000).
	// An attempt over either is refused before the handshake.
	PerIPRate, PerIPBurst, GlobalRate, GlobalBurst float64
	// MinStreams and MaxStreams bound a connection's concurrent
	// unidirectional streams (Agave 4.x: 128 for unstaked peers; staked
	// clamp(128 + share*(100,000-128), 128, 512)).
	MinStreams, MaxStreams int
	// UnstakedPerWindow is an unstaked connection's streams per
	// ThrottleWindow (Agave 4.x: 200 tx/s, 20 per 100 ms).
	UnstakedPerWindow int
	// StakedCapacity is the staked streams per ThrottleWindow the server
	// takes before staked peers are throttled (Agave 4.x: 500k streams/s,
	// 80% of it staked: 40,000 per 100 ms); then a staked connection gets
	// its stake's share of it, at least StakedFloor (21) per window.
	StakedCapacity, StakedFloor int
}

// ThrottleWindow is the period stream quotas are counted over (Agave
// 4.x's STREAM_THROTTLING_INTERVAL).
const ThrottleWindow = 100 * time.Millisecond

// Agave4 returns Agave 4.x's limits.
func Agave4() Limits {
	return Limits{
		MaxStakedConns: 2000, MaxUnstakedConns: 2000,
		MaxConnsPerUnstakedIP: 8, MaxConnsPerStakedPeer: 16,
		PerIPRate: 8, PerIPBurst: 80, GlobalRate: 2500, GlobalBurst: 1000,
		MinStreams: 128, MaxStreams: 512,
		UnstakedPerWindow: 20,
		StakedCapacity:    40_000, StakedFloor: 21,
	}
}

// withDefaults fills each zero field with Agave 4.x's.
func (l Limits) withDefaults() Limits {
	d := Agave4()
	def := func(v *int, x int) {
		if *v == 0 {
			*v = x
		}
	}
	deff := func(v *float64, x float64) {
		if *v == 0 {
			*v = x
		}
	}
	def(&l.MaxStakedConns, d.MaxStakedConns)
	def(&l.MaxUnstakedConns, d.MaxUnstakedConns)
	def(&l.MaxConnsPerUnstakedIP, d.MaxConnsPerUnstakedIP)
	def(&l.MaxConnsPerStakedPeer, d.MaxConnsPerStakedPeer)
	deff(&l.PerIPRate, d.PerIPRate)
	deff(&l.PerIPBurst, d.PerIPBurst)
	deff(&l.GlobalRate, d.GlobalRate)
	deff(&l.GlobalBurst, d.GlobalBurst)
	def(&l.MinStreams, d.MinStreams)
	def(&l.MaxStreams, d.MaxStreams)
	def(&l.UnstakedPerWindow, d.UnstakedPerWindow)
	def(&l.StakedCapacity, d.StakedCapacity)
	def(&l.StakedFloor, d.StakedFloor)
	return l
}

// Stakes maps identities to stake in lamports. Its zero value (or nil)
// has no stake: every peer is unstaked. It is read-only once built.
type Stakes struct {
	m     map[Identity]uint64
	total uint64
}

// NewStakes returns the table for m.
func NewStakes(m map[Identity]uint64) *Stakes {
	s := &Stakes{m: make(map[Identity]uint64, len(m))}
	for id, l := range m {
		s.m[id] = l
		s.total += l
	}
	return s
}

// LoadStakes reads a stakes file: a JSON object of base58 identity ->
// lamports ({"9xQe...": 5000000000}).
func LoadStakes(path string) (*Stakes, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("quic: stakes: %w", err)
	}
	var raw map[string]uint64
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("quic: stakes %s: %w", path, err)
	}
	m := make(map[Identity]uint64, len(raw))
	for k, v := range raw {
		id, err := base58.Decode(k)
		if err != nil || len(id) != len(Identity{}) {
			return nil, fmt.Errorf("quic: stakes %s: %q is not a base58 ed25519 key", path, k)
		}
		m[Identity(id)] = v
	}
	return NewStakes(m), nil
}

// Total returns the stake of all identities.
func (s *Stakes) Total() uint64 {
	if s == nil {
		return 0
	}
	return s.total
}

// Of returns id's stake as admission counts it: 0 (unstaked) when it is
// below 1/50,000 of the total (Agave 4.x's minimum staked share).
func (s *Stakes) Of(id Identity) uint64 {
	if s == nil {
		return 0
	}
	l := s.m[id]
	if l == 0 || float64(l)*50_000 < float64(s.total) {
		return 0
	}
	return l
}

// share returns stake / total, 0 without stake.
func (s *Stakes) share(stake uint64) float64 {
	if stake == 0 || s.Total() == 0 {
		return 0
	}
	return float64(stake) / float64(s.total)
}

// MaxStreams returns the concurrent unidirectional streams a connection
// with stake may have open (Agave 4.x: unstaked MinStreams; staked
// clamp(128 + share*(100,000-128), 128, 512)).
func (l Limits) maxStreams(share float64) int {
	if share == 0 {
		return l.MinStreams
	}
	n := float64(l.MinStreams) + share*(100_000-float64(l.MinStreams))
	return int(math.Min(math.Max(n, float64(l.MinStreams)), float64(l.MaxStreams)))
}

// stakedQuota returns a staked connection's streams per ThrottleWindow
// when the staked load is at capacity: its stake's share of it, at least
// StakedFloor (Agave 4.x's floor).
func (l Limits) stakedQuota(share float64) int {
	return max(l.StakedFloor, int(share*float64(l.StakedCapacity)))
}

// bucket is a token bucket: rate tokens per period, holding at most
// burst; it starts full.
type bucket struct {
	tokens float64
	last   time.Time
}

// take takes a token if one is left at now.
func (b *bucket) take(now time.Time, rate float64, per time.Duration, burst float64) bool {
	if b.last.IsZero() {
		b.tokens = burst
	} else if dt := now.Sub(b.last); dt > 0 {
		b.tokens = math.Min(burst, b.tokens+rate*dt.Seconds()/per.Seconds())
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// full reports whether the bucket would be full at now: one that is can
// be forgotten.
func (b *bucket) full(now time.Time, rate float64, per time.Duration, burst float64) bool {
	return b.tokens+rate*now.Sub(b.last).Seconds()/per.Seconds() >= burst
}
