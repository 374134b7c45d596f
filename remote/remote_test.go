package remote

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/txview"
)

func testKey(i int) ed25519.PrivateKey {
	var seed [32]byte
	seed[0], seed[1], seed[2] = byte(i), byte(i>>8), 0x55
	return ed25519.NewKeyFromSeed(seed[:])
}

// transfer returns a signed transfer from key i, padded with a memo-like
// instruction so that it is size bytes long (0: no padding).
func transfer(t testing.TB, i, size int) []byte {
	t.Helper()
	k := testKey(i)
	var to, bh [32]byte
	to[0], to[1], bh[0] = byte(i), byte(i>>8), 7
	m := txview.Message{Payer: txview.PublicKey(k), Blockhash: bh,
		Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(k), to, uint64(i)+1)}}
	tx, err := m.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	if size == 0 {
		return tx
	}
	var memo [32]byte
	memo[0] = 0x99
	pad := size - len(tx) - 40 // the instruction's own bytes, about
	for range 8 {
		m2 := m
		m2.Instructions = append(append([]txview.Ix(nil), m.Instructions...), txview.Ix{Program: memo, Data: make([]byte, pad)})
		if tx, err = m2.Sign(k); err != nil {
			t.Fatal(err)
		}
		if len(tx) == size {
			return tx
		}
		pad += size - len(tx)
	}
	t.Fatalf("no transfer of %d bytes (last %d)", size, len(tx))
	return nil
}

// kinds of test packet.
const (
	good = iota
	badSig
	garbage
	numKinds
)

// fill fills b with n packets: every kind in turn, from key base on.
// It returns how many of each kind.
func fill(t testing.TB, b *packet.Batch, base, n, size int) (counts [numKinds]int) {
	t.Helper()
	for i := range n {
		k := i % numKinds
		tx := transfer(t, base+i, size)
		switch k {
		case badSig:
			tx[5] ^= 1
		case garbage:
			tx = []byte{0xff, 1, 2, 3}
		}
		if !b.Next().Fill(tx) {
			t.Fatalf("packet %d: %d bytes do not fit", i, len(tx))
		}
		counts[k]++
	}
	return counts
}

func newPool(t testing.TB) *packet.Pool {
	t.Helper()
	p, err := packet.NewPool(packet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startLeader starts a dispatcher; a zero Timeout is a minute here, so
// that a verifier slowed by the race detector on a busy machine is not
// taken for a stalled one.
func startLeader(t testing.TB, cfg LeaderConfig) *Dispatcher {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Minute
	}
	x, err := NewDispatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	return x
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// pass is one TryStart's batches and how often its done ran.
type pass struct {
	batches []*packet.Batch
	counts  [numKinds]int
	done    atomic.Int32
}

func newPass(t testing.TB, pool *packet.Pool, batches, perBatch, size, base int) *pass {
	p := &pass{}
	for i := range batches {
		b := pool.Get()
		c := fill(t, b, base+i*perBatch, perBatch, size)
		for k := range c {
			p.counts[k] += c[k]
		}
		p.batches = append(p.batches, b)
	}
	return p
}

func (p *pass) start(t testing.TB, x *Dispatcher) {
	t.Helper()
	waitFor(t, "a credit", func() bool { return x.TryStart(p.batches, traceCtx{}.sc(), func() { p.done.Add(1) }) })
}

// check asserts that p ended once, with every packet's outcome its kind's.
func (p *pass) check(t testing.TB) {
	t.Helper()
	if n := p.done.Load(); n != 1 {
		t.Fatalf("done ran %d times, want once", n)
	}
	var got [numKinds]int
	for _, b := range p.batches {
		for i := range b.Packets() {
			pk := b.At(i)
			switch {
			case !pk.Discarded():
				got[good]++
			case pk.Meta.Outcome == packet.OutcomeBadSignature:
				got[badSig]++
			case pk.Meta.Outcome == packet.OutcomeParse:
				got[garbage]++
			default:
				t.Errorf("packet %d: outcome %v", i, pk.Meta.Outcome)
			}
		}
	}
	if got != p.counts {
		t.Errorf("verified, bad signature, parse = %v, want %v", got, p.counts)
	}
}

func (p *pass) release() {
	for _, b := range p.batches {
		b.Release()
	}
}

// TestVerdictsCrossTheWire: a pass of every kind of packet checked by a
// verifier in another actor system over loopback gets the outcomes a
// local check gives, and its packets are the verifier's work.
func TestVerdictsCrossTheWire(t *testing.T) {
	if isolate(t) {
		return
	}
	s := startChild(t, "honest")
	x := startLeader(t, LeaderConfig{Verifiers: []string{s.addr}, Audit: 1})
	waitFor(t, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	p := newPass(t, newPool(t), 3, 30, 0, 0)
	defer p.release()
	p.start(t, x)
	x.Wait()
	p.check(t)
	st := x.Stats()
	// 90 packets, 30 garbage discarded by the leader's parse: 60 sent,
	// all audited (Audit 1) and none wrong.
	if st.Sent != 1 || st.Remote != 1 || st.Local != 0 || st.Packets != 60 || st.Audited != 60 || st.Liars != 0 {
		t.Errorf("leader stats %+v: want 1 pass of 60 packets, ended remotely, 60 audited", st)
	}
	if ss := s.stop(t); ss.Requests != 1 || ss.Packets != 60 || ss.Verified != 30 || ss.Signatures != 60 || ss.Refused != 0 {
		t.Errorf("verifier stats %+v: want 1 request, 60 packets, 30 verified", ss)
	}
	if st.Credits != DefaultCredits {
		t.Errorf("%d credits free after the pass, want %d", st.Credits, DefaultCredits)
	}
}

// TestLargestBatch: passes of full batches of the largest packets (64 x
// 1232 bytes, 79 KB) cross the wire intact, one to sixteen batches a
// pass (1.3 MB), many in flight at once: protoactor's endpoint writer
// would pack up to 1,000 messages into one gRPC message, which gRPC
// refuses silently over its limit. Every pass ends remotely.
func TestLargestBatch(t *testing.T) {
	if isolate(t) {
		return
	}
	s := startChild(t, "honest")
	x := startLeader(t, LeaderConfig{Verifiers: []string{s.addr}, Credits: 8, Audit: 0.05})
	waitFor(t, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	pool := newPool(t)
	one := newPass(t, pool, 1, 64, packet.Size, 0)
	for _, b := range one.batches {
		for i := range b.Packets() {
			if p := b.At(i); p.Meta.Size != packet.Size && p.Data()[0] != 0xff {
				t.Fatalf("packet %d: %d bytes, want %d", i, p.Meta.Size, packet.Size)
			}
		}
	}
	// Clones of that batch, so that signing stays cheap.
	var passes []*pass
	for _, n := range []int{1, 1, 1, 1, 4, 4, 16, 16} {
		p := &pass{}
		for range n {
			p.batches = append(p.batches, one.batches[0].Clone())
			for k := range one.counts {
				p.counts[k] += one.counts[k]
			}
		}
		passes = append(passes, p)
	}
	for _, p := range passes {
		p.start(t, x)
	}
	x.Wait()
	for _, p := range passes {
		p.check(t)
		p.release()
	}
	one.release()
	st := x.Stats()
	if st.Remote != uint64(len(passes)) || st.Local != 0 || st.TooBig != 0 {
		t.Errorf("stats %+v: want all %d passes ended remotely", st, len(passes))
	}
	live := 0
	for _, p := range passes {
		live += p.counts[good] + p.counts[badSig]
	}
	if ss := s.stop(t); ss.Packets != uint64(live) || ss.Malformed != 0 {
		t.Errorf("verifier stats %+v: want %d packets", ss, live)
	}
}

// TestLiarCaught: a verifier that inverts its verdicts is caught by the
// audit, cut off for good, and its pass checked at the leader: no forged
// transfer passes. A second verifier, honest, then gets the work.
func TestLiarCaught(t *testing.T) {
	if isolate(t) {
		return
	}
	liar := startChild(t, "flip")
	x := startLeader(t, LeaderConfig{Verifiers: []string{liar.addr}, Audit: 0.5, ProbeEvery: 10 * time.Millisecond})
	waitFor(t, "the liar in service", func() bool { return x.Stats().Verifiers == 1 })
	pool := newPool(t)
	p := newPass(t, pool, 1, 60, 0, 0)
	defer p.release()
	p.start(t, x)
	x.Wait()
	p.check(t)
	st := x.Stats()
	if st.Liars != 1 || st.Lied != 1 || st.Local != 1 || st.Remote != 0 || st.Verifiers != 0 || st.Credits != 0 {
		t.Fatalf("stats %+v: want the liar cut off, its pass checked here", st)
	}
	// Cut off for good: probes do not bring it back.
	time.Sleep(50 * time.Millisecond)
	if st := x.Stats(); st.Verifiers != 0 || x.TryStart(p.batches, traceCtx{}.sc(), func() {}) {
		t.Fatalf("the liar is back in service: %+v", st)
	}
	honest := startChild(t, "honest")
	x.Join(honest.addr)
	waitFor(t, "the honest verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	q := newPass(t, pool, 1, 60, 0, 100)
	defer q.release()
	q.start(t, x)
	x.Wait()
	q.check(t)
	if st := x.Stats(); st.Remote != 1 || honest.stop(t).Requests != 1 {
		t.Errorf("stats %+v: want the second pass ended by the honest verifier", st)
	}
}

// TestVerifierDiesMidPass: a verifier killed (SIGKILL) with a pass in
// flight: the pass is checked at the leader, once, counted as a retry
// (the connection's loss is noticed before the timeout) or a timeout;
// the verifier's credits leave the pool.
func TestVerifierDiesMidPass(t *testing.T) {
	if isolate(t) {
		return
	}
	s := startChild(t, "hold")
	x := startLeader(t, LeaderConfig{Verifiers: []string{s.addr}, Timeout: 10 * time.Second})
	waitFor(t, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	p := newPass(t, newPool(t), 2, 30, 0, 0)
	defer p.release()
	p.start(t, x)
	<-s.received
	s.kill()
	x.Wait()
	p.check(t)
	st := x.Stats()
	if st.Local != 1 || st.Retries+st.Timeouts != 1 || st.Remote != 0 || st.Verifiers != 0 || st.Credits != 0 {
		t.Errorf("stats %+v: want the pass checked here once, the verifier out of service", st)
	}
}

// TestLateReplyIgnored: a verifier that answers after the timeout: the
// pass was checked at the leader, once, and the late verdicts are
// ignored. The verifier answers probes, so it comes back into service.
func TestLateReplyIgnored(t *testing.T) {
	if isolate(t) {
		return
	}
	s := startChild(t, "slow")
	x := startLeader(t, LeaderConfig{Verifiers: []string{s.addr}, Timeout: childDelay / 3, ProbeEvery: 20 * time.Millisecond})
	waitFor(t, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	p := newPass(t, newPool(t), 1, 30, 0, 0)
	defer p.release()
	p.start(t, x)
	x.Wait()
	waitFor(t, "the late reply", func() bool { return x.Stats().Late == 1 })
	p.check(t)
	st := x.Stats()
	if st.Timeouts != 1 || st.Local != 1 || st.Remote != 0 {
		t.Errorf("stats %+v: want one timeout, the pass checked here", st)
	}
	waitFor(t, "the verifier back in service", func() bool { return x.Stats().Verifiers == 1 })
}

// TestTraceCrossesTheHop: the verifier's span for a pass is a child of
// the leader's span (the context carried in the request), in the same
// trace, under the verifier's own service name.
func TestTraceCrossesTheHop(t *testing.T) {
	if isolate(t) {
		return
	}
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	s := startChild(t, "honest", traceEnv+"="+path)
	x := startLeader(t, LeaderConfig{Verifiers: []string{s.addr}})
	waitFor(t, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	p := newPass(t, newPool(t), 1, 30, 0, 0)
	defer p.release()
	parent := traceCtx{id: 7}.sc() // sampled
	waitFor(t, "a credit", func() bool { return x.TryStart(p.batches, parent, func() { p.done.Add(1) }) })
	x.Wait()
	p.check(t)
	s.stop(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spans, err := trace.ReadSpans(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the verifier's one:\n%s", len(spans), b)
	}
	sp := spans[0]
	if sp.Name != "sigverify.remote" || sp.TraceID != hex.EncodeToString(parent.TraceID[:]) || sp.ParentID != hex.EncodeToString(parent.SpanID[:]) {
		t.Errorf("span %s in trace %s, parent %s: want sigverify.remote, a child of %x in %x", sp.Name, sp.TraceID, sp.ParentID, parent.SpanID, parent.TraceID)
	}
	if sp.Attributes["tpu.packets"] != float64(20) || !strings.Contains(string(b), `"tpu-verifier"`) {
		t.Errorf("span attributes %v (want tpu.packets 20), service tpu-verifier in:\n%s", sp.Attributes, b)
	}
}

// TestRefusedChecksHere: verdicts a verifier refuses are not applied:
// the pass is checked at the leader, counted (Refused), and the
// verifier stays in service with its credit back.
func TestRefusedChecksHere(t *testing.T) {
	if isolate(t) {
		return
	}
	s := startChild(t, "refuse")
	x := startLeader(t, LeaderConfig{Verifiers: []string{s.addr}})
	waitFor(t, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	p := newPass(t, newPool(t), 1, 30, 0, 0)
	defer p.release()
	p.start(t, x)
	x.Wait()
	p.check(t)
	if st := x.Stats(); st.Refused != 1 || st.Local != 1 || st.Remote != 0 || st.Verifiers != 1 || st.Credits != DefaultCredits {
		t.Errorf("stats %+v: want the pass refused, checked here, the verifier still in service", st)
	}
}

// TestTooBigStaysHere: a pass whose request would pass MaxRequestBytes
// is refused by TryStart (counted, TooBig), its credit kept, its packets
// parsed for the local check.
func TestTooBigStaysHere(t *testing.T) {
	if isolate(t) {
		return
	}
	s := startChild(t, "honest")
	x := startLeader(t, LeaderConfig{Verifiers: []string{s.addr}})
	waitFor(t, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	pool := newPool(t)
	one := newPass(t, pool, 1, 64, packet.Size, 0)
	defer one.release()
	n := 2 * MaxRequestBytes / (64 * packet.Size) // a third of the packets are garbage, not sent
	var batches []*packet.Batch
	for range n {
		batches = append(batches, one.batches[0].Clone())
	}
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	if x.TryStart(batches, traceCtx{}.sc(), func() { t.Error("done called for a refused pass") }) {
		t.Fatal("TryStart took a pass of more than MaxRequestBytes")
	}
	if st := x.Stats(); st.TooBig != 1 || st.Sent != 0 || st.Credits != DefaultCredits {
		t.Errorf("stats %+v: want one pass too big, no credit taken", st)
	}
	if p := batches[0].At(0); p.Meta.Parsed == (packet.Parsed{}) {
		t.Error("the refused pass's packets were not parsed")
	}
	// A smaller pass still goes.
	q := &pass{batches: []*packet.Batch{one.batches[0].Clone()}, counts: one.counts}
	defer q.release()
	q.start(t, x)
	x.Wait()
	q.check(t)
}
