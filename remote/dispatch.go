package remote

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/remote/wire"
	"github.com/tpugo/tpu/stages/sigverify"
)

// The dispatcher actor's messages.

// job: TryStart -> the dispatcher. A pass to place on a verifier with a
// credit free; the dispatcher owns it (and its batches) until done.
type job struct {
	id      uint64
	req     *encoded         // its VerifyRequest
	pkts    []*packet.Packet // the live packets req carries, in its order
	batches []*packet.Batch
	done    func()
	w       *peer       // the verifier it was sent to
	timer   *time.Timer // its timeout
}

// joinMsg / leaveMsg: the Dispatcher -> the dispatcher. A verifier to
// probe and put in service; one to take out of it.
type joinMsg struct{ addr string }
type leaveMsg struct{ addr string }

// timeoutMsg: a job's timer -> the dispatcher.
type timeoutMsg struct{ id uint64 }

// probeTick: the probe timer -> the dispatcher. Probe the verifiers out
// of service.
type probeTick struct{}

// peer is one verifier as the dispatcher sees it.
type peer struct {
	addr    string
	pid     *actor.PID
	up      bool   // in service: its credits count in free
	free    int    // its credits free, while up
	cut     bool   // caught lying: never probed again
	left    bool   // left the membership: not probed
	probing bool   // a probe is under way
	placed  uint64 // when it was last sent a pass (dispatcher.placed), 0: never
	jobs    map[uint64]*job
}

// dispatcher is the actor. Its fields are its own, but for counts,
// which Stats reads under mu.
type dispatcher struct {
	x        *Dispatcher
	verifier *sigverify.Verifier // checks here: redone passes, the audit
	auditor  auditor
	peers    map[string]*peer
	jobs     map[uint64]*job
	placed   uint64 // passes placed on verifiers so far
	self     *actor.PID
	root     *actor.RootContext
	ticker   *time.Ticker
	stop     chan struct{}

	mu sync.Mutex
	st Stats
}

func newDispatcher(x *Dispatcher, v *sigverify.Verifier, pool *packet.Pool) *dispatcher {
	return &dispatcher{x: x, verifier: v, peers: map[string]*peer{}, jobs: map[uint64]*job{}, root: x.system.Root,
		auditor: auditor{rate: x.cfg.Audit, verifier: v, pool: pool}}
}

func (d *dispatcher) stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st
}

// count changes the counts under mu.
func (d *dispatcher) count(f func(st *Stats)) {
	d.mu.Lock()
	f(&d.st)
	d.mu.Unlock()
}

func (d *dispatcher) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		d.self = ctx.Self()
		d.ticker = time.NewTicker(d.x.cfg.ProbeEvery)
		d.stop = make(chan struct{})
		go func(t *time.Ticker, stop chan struct{}) {
			for {
				select {
				case <-t.C:
					d.root.Send(d.self, probeTick{})
				case <-stop:
					return
				}
			}
		}(d.ticker, d.stop)
	case *actor.Stopping:
		d.ticker.Stop()
		close(d.stop)
	case *job:
		d.place(ctx, msg)
	case *wire.VerifyReply:
		d.reply(msg)
	case timeoutMsg:
		if j := d.jobs[msg.id]; j != nil {
			d.count(func(st *Stats) { st.Timeouts++ })
			d.x.cfg.Logger.Warn("remote verifier: no verdicts in time; out of service until it answers", "verifier", j.w.addr, "timeout", d.x.cfg.Timeout)
			d.redoDown(j)
		}
	case joinMsg:
		p := d.peers[msg.addr]
		if p == nil {
			p = &peer{addr: msg.addr, pid: actor.NewPID(msg.addr, ActorName), jobs: map[uint64]*job{}}
			d.peers[msg.addr] = p
		}
		p.left = false
		d.probe(ctx, p)
	case leaveMsg:
		if p := d.peers[msg.addr]; p != nil {
			p.left = true
			d.down(p)
		}
	case probeTick:
		for _, p := range d.peers {
			d.probe(ctx, p)
		}
	case *actor.Terminated:
		// The remote's endpoint to a verifier closed: its passes in
		// flight will not be answered.
		if p := d.peers[msg.Who.Address]; p != nil && p.up {
			d.x.cfg.Logger.Warn("remote verifier: connection lost", "verifier", p.addr)
			d.down(p)
		}
	}
}

// probe asks p whether it is there, if it is out of service and may come
// back; its answer puts it in service.
func (d *dispatcher) probe(ctx actor.Context, p *peer) {
	if p.up || p.cut || p.left || p.probing {
		return
	}
	p.probing = true
	// At least a second: a probe that times out is only sent again.
	f := ctx.RequestFuture(p.pid, &wire.Probe{}, max(d.x.cfg.Timeout, time.Second))
	ctx.ReenterAfter(f, func(res any, err error) {
		p.probing = false
		if _, ok := res.(*wire.ProbeReply); !ok || err != nil || p.up || p.cut || p.left {
			return
		}
		p.up, p.free = true, d.x.cfg.Credits
		d.x.free.Add(int64(p.free))
		if f := d.x.onFree.Load(); f != nil {
			(*f)()
		}
		ctx.Watch(p.pid)
		d.x.cfg.Logger.Info("remote verifier: in service", "verifier", p.addr, "credits", p.free)
		d.count(func(st *Stats) { st.Verifiers++ })
	})
}

// down takes p out of service: its free credits leave the pool, and its
// passes in flight are checked here (counted, Retries).
func (d *dispatcher) down(p *peer) {
	if p.up {
		p.up = false
		d.x.free.Add(-int64(p.free))
		p.free = 0
		d.count(func(st *Stats) { st.Verifiers-- })
	}
	for _, j := range p.jobs {
		d.count(func(st *Stats) { st.Retries++ })
		d.redo(j)
	}
}

// place sends j to the verifier in service with the most credits free,
// of those the one sent a pass longest ago (so that verifiers that keep
// up, all credits free at each pass, take turns rather than whichever
// the map yields first), or checks it here if none has a credit.
func (d *dispatcher) place(ctx actor.Context, j *job) {
	var best *peer
	for _, p := range d.peers {
		if p.up && p.free > 0 && (best == nil || p.free > best.free || p.free == best.free && p.placed < best.placed) {
			best = p
		}
	}
	if best == nil {
		// Its credit was taken from a verifier that has since gone out
		// of service, whose credits left the pool already: give it back.
		d.x.free.Add(1)
		d.count(func(st *Stats) { st.NoWorker++ })
		d.checkHere(j)
		d.x.putJob(j) // its request never left
		return
	}
	best.free--
	d.placed++
	best.placed = d.placed
	j.w = best
	id := j.id
	d.jobs[id] = j
	best.jobs[id] = j
	j.timer = time.AfterFunc(d.x.cfg.Timeout, func() { d.root.Send(d.self, timeoutMsg{id}) })
	ctx.Request(best.pid, j.req)
}

// release ends j's time on its verifier: the credit goes back if the
// verifier is still in service.
func (d *dispatcher) release(j *job) {
	id := j.id
	delete(d.jobs, id)
	delete(j.w.jobs, id)
	j.timer.Stop()
	if j.w.up {
		j.w.free++
		d.x.free.Add(1)
	}
}

// redo takes j off its verifier and checks it here.
func (d *dispatcher) redo(j *job) {
	d.release(j)
	d.checkHere(j)
}

// redoDown takes j's verifier out of service, then checks j here. In
// that order: once j ends, its caller's Wait returns, and what it reads
// of Stats must already show the verifier gone.
func (d *dispatcher) redoDown(j *job) {
	w := j.w
	d.release(j)
	d.down(w)
	d.checkHere(j)
}

// checkHere checks j's batches here and ends it: the live packets were
// parsed by TryStart, no verdict of a verifier applied.
func (d *dispatcher) checkHere(j *job) {
	d.verifier.Verify(j.batches...)
	d.count(func(st *Stats) { st.Local++ })
	d.end(j)
}

// end hands j's batches back to the caller of TryStart.
func (d *dispatcher) end(j *job) {
	j.done()
	d.x.pending.Done()
}

// reply applies a verifier's verdicts to its pass, after the audit.
func (d *dispatcher) reply(r *wire.VerifyReply) {
	j := d.jobs[r.Id]
	if j == nil {
		d.count(func(st *Stats) { st.Late++ })
		return
	}
	// Answered: its request has left the leader, and however j ends
	// here, it may be reused.
	defer d.x.putJob(j)
	if r.Error != "" || len(r.Verdicts) != len(j.pkts) || refuses(r.Verdicts) {
		d.x.cfg.Logger.Warn("remote verifier: verdicts not usable; checked here", "verifier", j.w.addr, "err", r.Error)
		d.count(func(st *Stats) { st.Refused++ })
		d.redo(j)
		return
	}
	if bad := d.audit(j, r.Verdicts); bad >= 0 {
		w := j.w
		d.x.cfg.Logger.Error("remote verifier: a verdict failed the audit; cut off", "verifier", w.addr, "packet", bad)
		d.count(func(st *Stats) { st.Lied++; st.Liars++ })
		w.cut = true
		d.redoDown(j)
		return
	}
	d.release(j)
	for i, v := range r.Verdicts {
		if wire.Verdict(v) != wire.Verdict_VERDICT_VERIFIED {
			p := j.pkts[i]
			p.Meta.Flags &^= packet.FlagSimpleVote
			p.Discard(packet.OutcomeBadSignature)
		}
	}
	d.count(func(st *Stats) { st.Remote++ })
	d.end(j)
}

// refuses reports whether any verdict is other than verified or bad.
func refuses(vs []byte) bool {
	for _, v := range vs {
		if v != byte(wire.Verdict_VERDICT_VERIFIED) && v != byte(wire.Verdict_VERDICT_BAD_SIGNATURE) {
			return true
		}
	}
	return false
}

// audit checks a random Audit fraction of j's verdicts here, and returns
// the index of the first wrong one, or -1.
func (d *dispatcher) audit(j *job, vs []byte) int {
	n, wrong := d.auditor.check(j.pkts, vs)
	if n > 0 {
		d.count(func(st *Stats) { st.Audited += uint64(n) })
	}
	return wrong
}
