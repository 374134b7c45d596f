package sigverify

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/ants/v2"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// VerifyConfig configures a Verifier.
type VerifyConfig struct {
	// Backend checks the signatures. The caller resolves it from a name
	// once (NewBackend); nil means the backend called DefaultBackend.
	Backend Backend
	// Workers is the number of pooled goroutines that check signatures.
	// Zero means GOMAXPROCS.
	Workers int
	// MinTaskSignatures is the fewest signatures worth a task of their
	// own: a call with fewer than Workers x MinTaskSignatures signatures
	// uses fewer tasks. Zero means 8 (a task costs well under a
	// microsecond to hand over, a signature about 35).
	MinTaskSignatures int
}

// ErrVerifyConfig reports an invalid VerifyConfig.
var ErrVerifyConfig = errors.New("sigverify: invalid verify config")

// Validate reports a configuration NewVerifier would reject.
func (c VerifyConfig) Validate() error {
	if c.Workers < 0 || c.MinTaskSignatures < 0 {
		return fmt.Errorf("%w: negative workers or task size", ErrVerifyConfig)
	}
	return nil
}

// VerifyStats counts the outcomes of one Verify call.
type VerifyStats struct {
	Packets      int // live packets looked at
	Verified     int // passed: every signature verified
	Parse        int // discarded: did not frame
	Sanitize     int // discarded: broke a sanitize rule
	BadSignature int // discarded: a signature failed
	Signatures   int // signatures checked
	SimpleVotes  int // passed packets flagged as simple votes
	Tasks        int // tasks started for it, Verify's caller included (0: tasks already running took it up)
	Panics       int // signature checks that panicked: each fails its signature (BadSignature)
}

// Add accumulates o into s.
func (s *VerifyStats) Add(o VerifyStats) {
	s.Packets += o.Packets
	s.Verified += o.Verified
	s.Parse += o.Parse
	s.Sanitize += o.Sanitize
	s.BadSignature += o.BadSignature
	s.Signatures += o.Signatures
	s.SimpleVotes += o.SimpleVotes
	s.Tasks += o.Tasks
	s.Panics += o.Panics
}

// Verifier parses and signature-checks whole batches, spreading the
// signature checks over a pool of workers in tasks of many signatures.
// Verify checks a set of batches and waits (a set worth one task it
// checks on the caller's goroutine); Start checks them without
// waiting, so that the caller can prepare the next set while the workers
// check this one (at most MaxPasses at once). It reuses its scratch
// space, so neither allocates in steady state. A Verifier is not safe for
// concurrent use (the sigverify stage owns one); Close releases its
// workers.
//
// Passes are checked in the order they start: at most Workers tasks run,
// and each claims chunks of signatures from the oldest pass with any left
// until none is left anywhere. So the oldest pass finishes first (its
// batches can move on, and its packets' room be refilled, while the next
// one is checked), and the checks never take more than Workers cores,
// whatever else is runnable.
type Verifier struct {
	backend Backend
	pool    *ants.PoolWithFunc
	workers int
	minTask int
	free    []*Pass // passes to reuse
	passes  sync.WaitGroup

	mu      sync.Mutex
	queue   []*Pass // started passes with signatures no task has claimed, oldest first
	running int     // tasks running

	// sync is Verify's pass, and synced its done: a buffered channel
	// rather than a WaitGroup, so that the pass is back before Verify
	// returns. syncs counts the dones sent, for the tasks that linger.
	sync   *Pass
	synced chan struct{}
	syncFn func(*Pass)
	syncs  atomic.Uint64
}

// MaxPasses is how many passes a caller should have under way at once:
// one being checked and the next ready, so that no core idles between
// them. More only queue longer.
const MaxPasses = 2

// Pass is one set of batches being checked: their parsed live packets and
// the signatures of those. Start returns it; its done function gets it
// when every verdict is applied.
type Pass struct {
	v     *Verifier
	sigs  []sigCheck
	pkts  []pktCheck
	stats VerifyStats
	done  func(*Pass)
	// next is the index of the first signature no task has claimed yet
	// (guarded by the Verifier's mu); left counts the signatures not yet
	// checked: the task that checks the last applies the verdicts.
	next int
	left atomic.Int64
}

// Stats returns the pass's counts. Valid once the pass is done.
func (p *Pass) Stats() VerifyStats { return p.stats }

// chunkSignatures is how many signatures a task claims at a time (0.3 ms
// of work with voi), unless a multi-signature backend names its own
// (chunkFor: lanes on ifma8 pairs two groups of eight). Tasks claim as
// they go rather than split a pass evenly up front, so that when the
// scheduler preempts one worker (on two cores, banking and fetch share
// them) the other takes over its share instead of idling until the pass
// ends.
const chunkSignatures = 8

func chunkFor(b Backend) int {
	if m, ok := b.(multiBackend); ok {
		return m.chunk()
	}
	return chunkSignatures
}

// sigCheck is one signature to check, pointing into its packet.
type sigCheck struct {
	pub      *[txview.KeySize]byte
	sig      *[txview.SignatureSize]byte
	msg      []byte
	ok       bool
	panicked bool // the backend panicked checking it (ok is false)
}

// pktCheck is a parsed packet and its signatures, sigs[first:first+n].
type pktCheck struct {
	p        *packet.Packet
	first, n int
}

// NewVerifier returns a Verifier with its worker pool started.
func NewVerifier(cfg VerifyConfig) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	backend := cfg.Backend
	if backend == nil {
		backend, _ = NewBackend("") // the default exists
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.MinTaskSignatures == 0 {
		cfg.MinTaskSignatures = 8
	}
	v := &Verifier{backend: backend, workers: cfg.Workers, minTask: cfg.MinTaskSignatures, synced: make(chan struct{}, 1)}
	// Twice the tasks that run at once: a task that has just returned
	// takes a moment to be back in the pool, and Invoke must not wait for
	// it.
	pool, err := ants.NewPoolWithFunc(2*cfg.Workers, func(arg any) {
		arg.(*Verifier).work()
	}, ants.WithPreAlloc(true))
	if err != nil {
		return nil, fmt.Errorf("sigverify: worker pool: %w", err)
	}
	v.pool = pool
	v.sync = v.newPass()
	v.syncFn = func(*Pass) {
		v.synced <- struct{}{}
		v.syncs.Add(1)
	}
	return v, nil
}

// Backend returns the signature backend in use.
func (v *Verifier) Backend() Backend { return v.backend }

// Close waits for the passes under way, then stops the worker pool. The
// Verifier must not be used afterwards.
func (v *Verifier) Close() {
	v.passes.Wait()
	v.pool.Release()
}

func (v *Verifier) newPass() *Pass { return &Pass{v: v} }

// work is one task: it checks chunks of signatures, oldest pass first,
// until no pass has any left to claim. Whoever checks a pass's last
// signature applies its verdicts and hands it to its done function.
//
// A task that runs out of chunks while another still checks the last of
// Verify's pass lingers for the done (see linger) before it leaves.
//
// A panic in the backend fails the signature being checked and no other
// (see check), so every claimed chunk is accounted for. A panic anywhere
// else (in a done function) ends the task, which the pool recovers: the
// task is uncounted and, if passes are still queued, another started in
// its place, or they would wait for the next Start.
func (v *Verifier) work() {
	drained := false // claim found nothing left and uncounted this task
	defer func() {
		if drained {
			return
		}
		v.mu.Lock()
		v.running--
		more := len(v.queue) > 0
		if more {
			v.running++
		}
		v.mu.Unlock()
		if more {
			v.invoke()
		}
	}()
	var (
		gen  uint64        // syncs before the last chunk of Verify's pass this task checked
		took time.Duration // how long that chunk took; 0: the pass is done, or was not Verify's
	)
	for {
		p, start, end := v.claim(nil)
		if p == nil {
			drained = true
			v.linger(gen, took)
			return
		}
		var t time.Time
		if p == v.sync {
			gen, t = v.syncs.Load(), time.Now()
		}
		took = 0
		if !v.checkChunk(p, start, end) && p == v.sync {
			took = time.Since(t)
		}
	}
}

// checkChunk checks p's signatures from start up to end and, if they
// were the last unchecked, applies the verdicts and hands p to its done
// function (finish); it reports whether it did.
func (v *Verifier) checkChunk(p *Pass, start, end int) (finished bool) {
	for i := start; i < end; {
		i = v.check(p, i, end)
	}
	if p.left.Add(int64(start-end)) == 0 {
		p.finish()
		return true
	}
	return false
}

// maxLinger caps a linger: about two lane chunks on the slowest
// assembly path (avx2x4, ~0.2 ms a chunk).
const maxLinger = 500 * time.Microsecond

// linger waits, for at most twice took (and maxLinger), until Verify's
// pass is done (syncs moves past gen), spinning: the chunks still being checked began
// at most about took ago, and may run slower on another core (this VM's
// two vCPUs differ by up to 20%). The task checking the last of them then
// readies Verify's sleeping caller while no P is idle, so the runtime has
// no idle P to wake for it: on a VM whose idle vCPU halts, that wake-up
// costs the waker 5-30 us (BenchmarkVerifyScaling), on the pass's
// critical path. The lingering task is no longer counted as running, but
// no pass is left to claim, and Verify's caller, asleep, starts none.
func (v *Verifier) linger(gen uint64, took time.Duration) {
	if took <= 0 {
		return
	}
	// took is wall time: a chunk whose task was descheduled reads long,
	// so the spin is capped as well.
	for deadline := time.Now().Add(min(2*took, maxLinger)); v.syncs.Load() == gen && time.Now().Before(deadline); {
	}
}

// check checks p's signatures from i up to end, and returns end, or, if
// the backend panics on one, fails that signature, marks it panicked and
// returns the index after it: a backend failure costs its packet, counted,
// never the rest of the chunk, and the task goes on.
func (v *Verifier) check(p *Pass, i, end int) (next int) {
	if m, ok := v.backend.(multiBackend); ok && checkMulti(m, p.sigs[i:end]) {
		return end
	}
	defer func() {
		if recover() != nil {
			s := &p.sigs[next]
			s.ok, s.panicked = false, true
			next++
		}
	}()
	for next = i; next < end; next++ {
		s := &p.sigs[next]
		s.ok = v.backend.Verify(s.pub, s.msg, s.sig)
	}
	return next
}

// multiBackend is a Backend that checks several signatures per call
// (lanes): verifyChecks sets ok on each of checks, as Verify would.
type multiBackend interface {
	verifyChecks(checks []sigCheck)
	// chunk is how many signatures it checks best in one call: a
	// multiple of its group, small enough that two workers share a pass.
	chunk() int
}

// checkMulti checks sigs in one call to m and reports whether it
// returned. If m panics, no verdict is kept and check goes through the
// signatures one by one, which fails only the one that panics.
func checkMulti(m multiBackend, sigs []sigCheck) (done bool) {
	defer func() {
		if recover() != nil {
			done = false
		}
	}()
	m.verifyChecks(sigs)
	return true
}

// invoke runs one counted task on the pool, or here if the pool is
// closed or broken, rather than lose the verdicts.
func (v *Verifier) invoke() {
	if err := v.pool.Invoke(v); err != nil {
		v.work()
	}
}

// claim takes the next chunk of the oldest pass with signatures left, or,
// for Verify's caller, of its own pass (own). With none left there it
// returns a nil pass, and the calling task is done: it is no longer
// counted as running. A pass leaves the queue with its last chunk, so a
// pass in the queue always has one.
func (v *Verifier) claim(own *Pass) (p *Pass, start, end int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case own != nil && own.next < len(own.sigs):
		p = own
	case own == nil && len(v.queue) > 0:
		p = v.queue[0]
	default:
		v.running--
		return nil, 0, 0
	}
	start = p.next
	end = min(start+chunkFor(v.backend), len(p.sigs))
	p.next = end
	if end == len(p.sigs) {
		i := slices.Index(v.queue, p) // a few passes at most
		v.queue = slices.Delete(v.queue, i, i+1)
	}
	return p, start, end
}

// Verify parses and sanitizes every live packet of the batches and checks
// its signatures: signature i by static key i over the message bytes. A
// packet passes only if all of them verify. Failures are discarded with
// outcome packet.OutcomeParse, OutcomeSanitize or OutcomeBadSignature (a
// signature whose check panics in the backend fails too, counted in
// Panics as well); packets already discarded are skipped; passing simple votes get
// packet.FlagSimpleVote. It borrows the batches: the caller must hold the
// sole reference of each while Verify runs, and the packets' bytes must
// not change until it returns.
//
// A pass that gets one task (Workers is 1, the pass has fewer signatures
// than two tasks warrant, see MinTaskSignatures, or only one of Workers
// is free: tasks of Start's passes run, and take this pass's chunks too
// once theirs are claimed) is checked on the caller's goroutine, as that
// one task: it wakes no pooled task, which on a VM whose idle vCPU
// halts costs the waker and the woken tens of microseconds each. A larger pass goes to
// the pooled tasks while the caller sleeps: a task readied by a goroutine
// that keeps running waits in that P's next slot, which an idle P steals
// only after a usleep(3) (the runtime's runqgrab), 60-100 us on this VM,
// so the caller blocking at once is what lets the idle P's task start as
// soon as it wakes.
func (v *Verifier) Verify(batches ...*packet.Batch) VerifyStats {
	p := v.sync
	if v.start(p, v.syncFn, batches, true) {
		v.help(p)
	}
	<-v.synced
	st := p.stats
	v.reset(p)
	return st
}

// help checks p, Verify's own pass, on the caller's goroutine, counted as
// its one running task, until no chunk is left to claim. A panic in the
// backend fails the signature being checked (see check); p's done
// function is Verify's, which does not panic.
func (v *Verifier) help(p *Pass) {
	for {
		q, start, end := v.claim(p)
		if q == nil {
			return
		}
		v.checkChunk(p, start, end)
	}
}

// Start does what Verify does without waiting: it parses the batches
// here, hands their signature checks to the workers and returns. When the
// last verdict is applied, done is called with the pass: on a worker's
// goroutine, or on the caller's, inside Start, when there is no signature
// to check (or the pool is closed); done must not wait for the caller.
// The batches are the pass's until then: the caller must hold the sole
// reference of each and leave them alone. Once done, the caller owns them
// again, reads Stats, and gives the pass back with Recycle. See MaxPasses.
func (v *Verifier) Start(done func(*Pass), batches ...*packet.Batch) *Pass {
	var p *Pass
	if n := len(v.free); n > 0 {
		p, v.free = v.free[n-1], v.free[:n-1]
	} else {
		p = v.newPass()
	}
	v.start(p, done, batches, false)
	return p
}

// Recycle gives back a done pass for reuse. It drops the pass's pointers
// into the batches, which go back to their pool.
func (v *Verifier) Recycle(p *Pass) {
	v.reset(p)
	v.free = append(v.free, p)
}

func (v *Verifier) reset(p *Pass) {
	clear(p.sigs)
	clear(p.pkts)
	p.sigs, p.pkts, p.stats, p.done = p.sigs[:0], p.pkts[:0], VerifyStats{}, nil
}

// start parses the batches into p and starts its tasks. With join, a pass
// that gets one task gets the caller: start reports whether it did, and
// the caller must then help.
func (v *Verifier) start(p *Pass, done func(*Pass), batches []*packet.Batch, join bool) (joined bool) {
	p.done = done
	st := &p.stats
	for _, b := range batches {
		pkts := b.Packets()
		for i := range pkts {
			pk := &pkts[i]
			if pk.Discarded() {
				continue
			}
			view, ok := parse(pk, st)
			if !ok {
				continue
			}
			n := view.NumSignatures()
			p.pkts = append(p.pkts, pktCheck{p: pk, first: len(p.sigs), n: n})
			msg := view.Message()
			for s := 0; s < n; s++ {
				p.sigs = append(p.sigs, sigCheck{pub: view.StaticKey(s), sig: view.Signature(s), msg: msg})
			}
		}
	}
	st.Signatures = len(p.sigs)
	v.passes.Add(1)
	n := len(p.sigs)
	if n == 0 {
		p.finish()
		return false
	}
	p.left.Store(int64(n))
	p.next = 0
	// Tasks already running take this pass's chunks once the older
	// passes' are claimed; start more only up to Workers, and only as
	// many as the pass has signatures for. Stats are set before the pass
	// is queued: a running task may finish it, and call done, at once.
	v.mu.Lock()
	tasks := max(0, min(v.workers-v.running, max(1, n/v.minTask)))
	v.running += tasks
	st.Tasks = tasks
	v.queue = append(v.queue, p)
	v.mu.Unlock()
	if join && tasks == 1 {
		return true
	}
	for i := 0; i < tasks; i++ {
		v.invoke()
	}
	return false
}

// parse parses and sanitizes pk, a live packet, counting it in st: it
// discards a failure (OutcomeParse, OutcomeSanitize) and reports false;
// it records the parse in pk.Meta.Parsed, which the consumers use, and
// flags a simple vote.
func parse(pk *packet.Packet, st *VerifyStats) (txview.View, bool) {
	st.Packets++
	view, err := txview.Parse(pk.Data())
	if err != nil {
		if txview.IsSanitize(err) {
			pk.Discard(packet.OutcomeSanitize)
			st.Sanitize++
		} else {
			pk.Discard(packet.OutcomeParse)
			st.Parse++
		}
		return txview.View{}, false
	}
	pk.Meta.Parsed = packet.Parsed(view.Layout()) // parsed once: the consumers use it
	if view.IsSimpleVote() {
		pk.Meta.Flags |= packet.FlagSimpleVote
	}
	return view, true
}

// Parse does the parse half of Verify, for checks made elsewhere (a
// remote verifier): it parses and sanitizes every live packet of the
// batches, discards the failures (counted in the stats' Parse and
// Sanitize) and records each parse in the packet's Meta.Parsed, which
// the checks then read. It borrows the batches, as Verify does.
func Parse(batches ...*packet.Batch) VerifyStats {
	var st VerifyStats
	for _, b := range batches {
		pkts := b.Packets()
		for i := range pkts {
			if pk := &pkts[i]; !pk.Discarded() {
				parse(pk, &st)
			}
		}
	}
	return st
}

// CheckParsed checks the signatures of pk, a live packet that Parse
// parsed, on the caller's goroutine with backend, and reports whether
// all of them verify. It reports false for a packet without a parse.
// It changes nothing. A backend that panics fails the packet.
func CheckParsed(backend Backend, pk *packet.Packet) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	view, ok := txview.Layout(pk.Meta.Parsed).View(pk.Data())
	if !ok {
		return false
	}
	msg := view.Message()
	for s := range view.NumSignatures() {
		if !backend.Verify(view.StaticKey(s), msg, view.Signature(s)) {
			return false
		}
	}
	return true
}

// finish applies the verdicts, then hands the pass to its done function.
// The pass is no longer under way even if done panics, so Close does not
// wait for it forever.
func (p *Pass) finish() {
	defer p.v.passes.Done()
	st := &p.stats
	for _, pc := range p.pkts {
		ok := true
		for _, s := range p.sigs[pc.first : pc.first+pc.n] {
			ok = ok && s.ok
			if s.panicked {
				st.Panics++
			}
		}
		if ok {
			st.Verified++
			if pc.p.Has(packet.FlagSimpleVote) {
				st.SimpleVotes++
			}
		} else {
			pc.p.Meta.Flags &^= packet.FlagSimpleVote
			pc.p.Discard(packet.OutcomeBadSignature)
			st.BadSignature++
		}
	}
	p.done(p)
}

// Workers returns how many goroutines check signatures at once.
func (v *Verifier) Workers() int { return v.workers }
