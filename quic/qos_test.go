package quic

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/packet"
)

// TestPeerIdentity: the identity is taken from exactly one ed25519
// certificate; none, two, or another key type: unstaked.
func TestPeerIdentity(t *testing.T) {
	k := newKey(t)
	cert, err := Certificate(k)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := PeerIdentity([]*x509.Certificate{c}); !ok || id != idOf(k) {
		t.Fatalf("one certificate: %x %v", id[:4], ok)
	}
	if _, ok := PeerIdentity(nil); ok {
		t.Fatal("no certificate gave an identity")
	}
	if _, ok := PeerIdentity([]*x509.Certificate{c, c}); ok {
		t.Fatal("two certificates gave an identity")
	}
	other := *c
	other.PublicKey = "not a key"
	if _, ok := PeerIdentity([]*x509.Certificate{&other}); ok {
		t.Fatal("a non-ed25519 key gave an identity")
	}
}

// TestStakes: the file format, the 1/50,000 floor, the stream limits.
func TestStakes(t *testing.T) {
	a, b, tiny := idOf(newKey(t)), idOf(newKey(t)), idOf(newKey(t))
	path := filepath.Join(t.TempDir(), "stakes.json")
	body := `{"` + base58.Encode(a[:]) + `": 600000, "` + base58.Encode(b[:]) + `": 399990, "` + base58.Encode(tiny[:]) + `": 10}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadStakes(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Total() != 1_000_000 || s.Of(a) != 600000 || s.Of(b) != 399990 {
		t.Fatalf("total %d a %d b %d", s.Total(), s.Of(a), s.Of(b))
	}
	if s.Of(tiny) != 0 { // 10 < 1,000,000/50,000 = 20
		t.Fatal("a stake below 1/50,000 of the total counts as staked")
	}
	if _, err := LoadStakes(writeFile(t, `{"nope": 1}`)); err == nil {
		t.Fatal("a bad key loaded")
	}
	l := Agave4()
	for _, c := range []struct {
		share float64
		want  int
	}{{0, 128}, {0.0001, 137}, {0.001, 227}, {0.5, 512}} {
		if got := l.maxStreams(c.share); got != c.want {
			t.Errorf("maxStreams(%v) = %d, want %d", c.share, got, c.want)
		}
	}
	if l.stakedQuota(0.00001) != 21 || l.stakedQuota(0.1) != 4000 {
		t.Fatalf("staked quotas %d %d", l.stakedQuota(0.00001), l.stakedQuota(0.1))
	}
}

func writeFile(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBucket: a token bucket starts full, refills at its rate, caps at
// its burst.
func TestBucket(t *testing.T) {
	var b bucket
	t0 := time.Unix(100, 0)
	for i := range 80 {
		if !b.take(t0, 8, time.Minute, 80) {
			t.Fatalf("take %d of the burst refused", i)
		}
	}
	if b.take(t0, 8, time.Minute, 80) {
		t.Fatal("took past the burst")
	}
	if !b.take(t0.Add(7500*time.Millisecond), 8, time.Minute, 80) { // 8/min: one per 7.5 s
		t.Fatal("no token after 7.5 s")
	}
	if b.take(t0.Add(7600*time.Millisecond), 8, time.Minute, 80) {
		t.Fatal("two tokens in 7.6 s")
	}
}

// TestConnRateRefused: attempts past the per-IP burst are refused before
// the handshake, counted.
func TestConnRateRefused(t *testing.T) {
	s, _ := startServer(t, Config{Limits: Limits{PerIPBurst: 3, PerIPRate: 0.001}})
	for range 3 {
		dial(t, s, nil)
	}
	waitFor(t, "3 admitted", func() bool { return s.Counts()[EventConnAccepted] == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := Dial(ctx, s.Addr(), nil); err == nil {
		c.Close()
		t.Fatal("a fourth connection was admitted past a burst of 3")
	}
	if c := s.Counts(); c[EventConnRefused] != 1 || c[EventConnAccepted] != 3 {
		t.Fatalf("counts %v", c)
	}
}

// TestTooManyPerIP: one connection over the per-IP limit is closed with
// code 4; a staked identity has its own limit.
func TestTooManyPerIP(t *testing.T) {
	staked := newKey(t)
	s, _ := startServer(t, Config{Stakes: NewStakes(map[Identity]uint64{idOf(staked): 1}),
		Limits: Limits{MaxConnsPerUnstakedIP: 2, MaxConnsPerStakedPeer: 1}})
	admitted(t, s, nil)
	admitted(t, s, nil)
	if code := refusedCode(t, s, nil); code != CodeTooMany {
		t.Fatalf("third unstaked: code %d", code)
	}
	admitted(t, s, staked) // staked: not in the IP's count
	if code := refusedCode(t, s, staked); code != CodeTooMany {
		t.Fatalf("second staked: code %d", code)
	}
	waitFor(t, "the counts", func() bool { return s.Counts()[EventConnTooMany] == 2 })
	if st, un := s.table.sizes(); st != 1 || un != 2 {
		t.Fatalf("tables %d staked %d unstaked", st, un)
	}
}

// TestTableFull: a full unstaked table drops its oldest (code 1); a full
// staked table drops a lower stake for a higher one; with no unstaked
// room at all, unstaked peers are disallowed (code 2).
func TestTableFull(t *testing.T) {
	low, high := newKey(t), newKey(t)
	s, _ := startServer(t, Config{Stakes: NewStakes(map[Identity]uint64{idOf(low): 1, idOf(high): 2}),
		Limits: Limits{MaxUnstakedConns: 2, MaxStakedConns: 1}})
	first := admitted(t, s, nil)
	admitted(t, s, nil)
	admitted(t, s, nil)
	if code := closeCode(t, first); code != CodeDropped {
		t.Fatalf("oldest unstaked: code %d", code)
	}
	l := admitted(t, s, low)
	admitted(t, s, high)
	if code := closeCode(t, l); code != CodeDropped {
		t.Fatalf("lower stake: code %d", code)
	}
	waitFor(t, "the counts", func() bool { return s.Counts()[EventConnDropped] == 2 })

	s2, _ := startServer(t, Config{Limits: Limits{MaxUnstakedConns: -1}})
	if code := refusedCode(t, s2, nil); code != CodeDisallowed {
		t.Fatalf("no unstaked room: code %d", code)
	}
	if c := s2.Counts(); c[EventConnDisallowed] != 1 {
		t.Fatalf("counts %v", c)
	}
}

// TestUnstakedThrottle: an unstaked connection gets UnstakedPerWindow
// streams per window: 30 streams at 5 a window take at least 5 windows,
// and the waits are counted. Every stream still lands.
func TestUnstakedThrottle(t *testing.T) {
	s, k := startServer(t, Config{Limits: Limits{UnstakedPerWindow: 5}})
	c := dial(t, s, nil)
	start := time.Now()
	for i := range 30 {
		send(t, c, tx(i, 50))
	}
	waitFor(t, "30 packets", func() bool { return k.len() == 30 })
	if d := time.Since(start); d < 5*ThrottleWindow {
		t.Fatalf("30 streams at 5 a window took %v, under 5 windows", d)
	}
	if n := s.Counts()[EventRateLimited]; n < 5 {
		t.Fatalf("rate_limited %d, want at least 5", n)
	}
}

// TestStakedUnthrottled: a staked connection is not throttled below
// capacity, and at capacity gets its share, at least the floor: with
// capacity saturated by the meter, a tiny stake sends 21 per window.
func TestStakedUnthrottled(t *testing.T) {
	staked := newKey(t)
	s, k := startServer(t, Config{Stakes: NewStakes(map[Identity]uint64{idOf(staked): 1}), Limits: Limits{UnstakedPerWindow: 1}})
	c := dial(t, s, staked)
	for i := range 100 {
		send(t, c, tx(i, 50))
	}
	waitFor(t, "100 packets", func() bool { return k.len() == 100 })
	if n := s.Counts()[EventRateLimited]; n != 0 {
		t.Fatalf("a staked connection below capacity was throttled %d times", n)
	}
	e := &connEntry{stake: 1}
	now := time.Now()
	for range 40_000 {
		s.load.add(now)
	}
	var w window
	for i := range 21 {
		w.used = i
		if s.quota(&w, e, 0.000001, now) != 0 {
			t.Fatalf("throttled at %d, under the floor of 21", i)
		}
	}
	w.used = 21
	if s.quota(&w, e, 0.000001, now) == 0 {
		t.Fatal("not throttled past the floor at capacity")
	}
}

// TestAssemblerAllocs: reserving, filling, committing and delivering a
// packet allocates nothing.
func TestAssemblerAllocs(t *testing.T) {
	pool, err := packet.NewPool(packet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	delivered := 0
	a := newAssembler(pool, time.Hour, func(b *packet.Batch, _ int64) { delivered += b.Len(); b.Release() })
	r := &streamReader{}
	m := packet.Meta{Addr: netip.MustParseAddrPort("127.0.0.1:9"), Flags: packet.FlagQUIC}
	one := func() {
		f, i, p, _ := a.reserve(r)
		copy(p.Buffer(), "transaction bytes")
		a.commit(f, i, 17, m)
	}
	for range 256 { // warm the pool and the fills
		one()
	}
	if n := testing.AllocsPerRun(1000, one); n != 0 {
		t.Fatalf("%v allocations per packet", n)
	}
	if delivered == 0 {
		t.Fatal("nothing delivered")
	}
}

// admitted dials s and waits until the server has admitted the
// connection, so that admission order is dial order.
func admitted(t *testing.T, s *Server, key ed25519.PrivateKey) *Conn {
	t.Helper()
	n := s.Counts()[EventConnAccepted]
	c := dial(t, s, key)
	waitFor(t, "the connection admitted", func() bool { return s.Counts()[EventConnAccepted] > n })
	return c
}

// TestLoadMeter: the staked load is the larger of the last full window's
// count and the current one's; a window with nothing after it is
// forgotten.
func TestLoadMeter(t *testing.T) {
	var m loadMeter
	t0 := time.Now()
	for range 10 {
		m.add(t0)
	}
	if !m.saturated(t0, 10) || m.saturated(t0, 11) {
		t.Fatal("the current window's 10")
	}
	t1 := t0.Add(ThrottleWindow)
	m.add(t1)
	if !m.saturated(t1, 10) {
		t.Fatal("the last window's 10 forgotten one window on")
	}
	if m.saturated(t1.Add(2*ThrottleWindow), 1) {
		t.Fatal("remembered two windows on")
	}
}
