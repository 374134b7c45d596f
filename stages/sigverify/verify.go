package sigverify

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/ants/v2"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// VerifyConfig configures a Verifier.
type VerifyConfig struct {
	// Backend names the signature backend (see BackendNames). Empty means
	// DefaultBackend.
	Backend string
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
	if _, err := NewBackend(c.Backend); err != nil {
		return err
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
	Tasks        int // tasks handed to the worker pool
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
}

// Verifier parses and signature-checks whole batches, spreading the
// signature checks over a pool of workers in tasks of many signatures.
// It reuses its scratch space, so Verify does not allocate in steady
// state. A Verifier is not safe for concurrent use (the sigverify stage
// owns one); Close releases its workers.
type Verifier struct {
	backend Backend
	pool    *ants.PoolWithFunc
	workers int
	minTask int
	sigs    []sigCheck
	pkts    []pktCheck
	wg      sync.WaitGroup
	// next is the index of the first signature of sigs no task has
	// claimed yet: tasks claim chunks of chunkSignatures as they go.
	next atomic.Int64
}

// chunkSignatures is how many signatures a task claims at a time (about
// 0.3 ms of work). Tasks claim as they go rather than split the pass
// evenly up front, so that when the scheduler preempts one worker (on two
// cores, banking and fetch share them) the other takes over its share
// instead of idling until the pass ends.
const chunkSignatures = 8

// sigCheck is one signature to check, pointing into its packet.
type sigCheck struct {
	pub *[txview.KeySize]byte
	sig *[txview.SignatureSize]byte
	msg []byte
	ok  bool
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
	backend, _ := NewBackend(cfg.Backend)
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.MinTaskSignatures == 0 {
		cfg.MinTaskSignatures = 8
	}
	v := &Verifier{backend: backend, workers: cfg.Workers, minTask: cfg.MinTaskSignatures}
	pool, err := ants.NewPoolWithFunc(cfg.Workers, func(arg any) {
		v := arg.(*Verifier)
		v.runTask()
		v.wg.Done()
	}, ants.WithPreAlloc(true))
	if err != nil {
		return nil, fmt.Errorf("sigverify: worker pool: %w", err)
	}
	v.pool = pool
	return v, nil
}

// Backend returns the signature backend in use.
func (v *Verifier) Backend() Backend { return v.backend }

// Close stops the worker pool. The Verifier must not be used afterwards.
func (v *Verifier) Close() { v.pool.Release() }

// runTask is one task: it checks chunks of the pass's signatures until
// none is left. Every task of a pass runs it.
func (v *Verifier) runTask() {
	b, n := v.backend, int64(len(v.sigs))
	for {
		end := v.next.Add(chunkSignatures)
		start := end - chunkSignatures
		if start >= n {
			return
		}
		for i := range v.sigs[start:min(end, n)] {
			s := &v.sigs[int(start)+i]
			s.ok = b.Verify(s.pub, s.msg, s.sig)
		}
	}
}

// Verify parses and sanitizes every live packet of the batches and checks
// its signatures: signature i by static key i over the message bytes. A
// packet passes only if all of them verify. Failures are discarded with
// outcome packet.OutcomeParse, OutcomeSanitize or OutcomeBadSignature;
// packets already discarded are skipped; passing simple votes get
// packet.FlagSimpleVote. It borrows the batches: the caller must hold the
// sole reference of each while Verify runs, and the packets' bytes must
// not change until it returns.
func (v *Verifier) Verify(batches ...*packet.Batch) VerifyStats {
	var st VerifyStats
	v.sigs, v.pkts = v.sigs[:0], v.pkts[:0]
	for _, b := range batches {
		pkts := b.Packets()
		for i := range pkts {
			p := &pkts[i]
			if p.Discarded() {
				continue
			}
			st.Packets++
			view, err := txview.Parse(p.Data())
			if err != nil {
				if txview.IsSanitize(err) {
					p.Discard(packet.OutcomeSanitize)
					st.Sanitize++
				} else {
					p.Discard(packet.OutcomeParse)
					st.Parse++
				}
				continue
			}
			if view.IsSimpleVote() {
				p.Meta.Flags |= packet.FlagSimpleVote
			}
			n := view.NumSignatures()
			v.pkts = append(v.pkts, pktCheck{p: p, first: len(v.sigs), n: n})
			msg := view.Message()
			for s := 0; s < n; s++ {
				v.sigs = append(v.sigs, sigCheck{pub: view.StaticKey(s), sig: view.Signature(s), msg: msg})
			}
		}
	}
	st.Signatures = len(v.sigs)
	st.Tasks = v.check()
	for _, pc := range v.pkts {
		ok := true
		for _, s := range v.sigs[pc.first : pc.first+pc.n] {
			ok = ok && s.ok
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
	// Drop the pointers into the batches: they go back to the pool.
	clear(v.sigs)
	clear(v.pkts)
	return st
}

// check verifies v.sigs on the pool in contiguous chunks, one per task,
// and waits for them. It returns the number of tasks.
func (v *Verifier) check() int {
	n := len(v.sigs)
	if n == 0 {
		return 0
	}
	tasks := min(v.workers, max(1, n/v.minTask))
	v.next.Store(0)
	v.wg.Add(tasks)
	for i := 0; i < tasks; i++ {
		if err := v.pool.Invoke(v); err != nil {
			// The pool is closed or broken: check here rather than lose
			// the verdicts.
			v.runTask()
			v.wg.Done()
		}
	}
	v.wg.Wait()
	return tasks
}
