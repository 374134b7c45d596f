package remote

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/txview"
)

// LeaderConfig configures the leader's side: the Dispatcher that sends
// sigverify passes to remote verifiers.
type LeaderConfig struct {
	// Listen is where the leader's own remote binds: verifiers send
	// their replies there. Empty means "127.0.0.1:0" (loopback, a free
	// port).
	Listen string
	// Verifiers are the verifiers' host:port addresses (tpu verifier
	// --listen). Each is probed until it answers, and again after it
	// dies or stalls. May be empty when Cluster finds them.
	Verifiers []string
	// Cluster, when not nil, finds verifiers through cluster membership
	// as they join and leave: the leader joins it as a client.
	Cluster *ClusterConfig
	// Credits is how many passes one verifier has in flight at most.
	// Zero means DefaultCredits.
	Credits int
	// Timeout is how long a pass may wait for its verdicts before it is
	// checked here instead, its verifier taken out of service until it
	// answers a probe. Zero means DefaultTimeout.
	Timeout time.Duration
	// ProbeEvery is how often a verifier out of service is probed. Zero
	// means DefaultProbeEvery.
	ProbeEvery time.Duration
	// Audit is the fraction of remote verdicts checked again here, at
	// random: a verifier caught giving a wrong one is cut off for good
	// and its passes checked here. Zero: none. At most 1.
	Audit float64
	// Verify configures the checks made here: passes whose verifier
	// died, stalled, lied or refused them, and the audit.
	Verify sigverify.VerifyConfig
	// TLS, when not nil, authenticates the links (mutual TLS); nil:
	// plaintext, for loopback.
	TLS *TLS
	// Logger receives the verifiers' comings and goings and protoactor's
	// lines. Nil: discard.
	Logger *slog.Logger
}

// Defaults of LeaderConfig's zero fields.
const (
	DefaultCredits    = 2
	DefaultTimeout    = 2 * time.Second
	DefaultProbeEvery = 500 * time.Millisecond
)

// Validate reports a configuration NewDispatcher would refuse.
func (c LeaderConfig) Validate() error {
	if c.Credits < 0 || c.Timeout < 0 || c.ProbeEvery < 0 {
		return errors.New("remote: negative credits, timeout or probe period")
	}
	if !(c.Audit >= 0 && c.Audit <= 1) {
		return fmt.Errorf("remote: audit fraction %v: want 0 to 1", c.Audit)
	}
	return c.Verify.Validate()
}

// Stats counts a Dispatcher's work. Passes are counted when they end,
// once each, by how: Remote (verdicts applied) plus Local (checked here)
// is every pass TryStart took that has ended.
type Stats struct {
	Sent      uint64 // passes TryStart took for a verifier (a NoWorker one never left; a pass redone is not sent again)
	Packets   uint64 // packets sent
	Remote    uint64 // passes that ended with a verifier's verdicts
	Local     uint64 // passes taken, then checked here: each of the reasons below, once
	Timeouts  uint64 // of Local: no verdicts within Timeout (remote_timeout)
	Retries   uint64 // of Local: their verifier died, stalled or was cut off with them in flight (remote_retry)
	Lied      uint64 // of Local: their verdicts failed the audit
	Refused   uint64 // of Local: verdicts that could not be used (refused packets, an error, a wrong count)
	NoWorker  uint64 // of Local: no verifier had a credit when the pass reached the dispatcher
	Late      uint64 // replies for passes already redone, ignored
	Audited   uint64 // packets whose verdict was checked again here
	Liars     uint64 // verifiers cut off by the audit
	TooBig    uint64 // passes TryStart refused as larger than MaxRequestBytes
	Verifiers int    // verifiers in service now
	Credits   int    // their credits free now
}

// Dispatcher sends whole sigverify passes to remote verifiers, each
// with a bounded number in flight (its credits): the only backpressure
// on a link, since protoactor's remote queues without bound. The
// batches stay here: the request carries copies of the live packets'
// bytes, the reply a verdict per packet, applied to the batches here.
// A pass whose verdicts do not come, or cannot be trusted, is checked
// here instead, exactly once: its reply, if it comes later, is ignored.
//
// TryStart is called by one goroutine (the sigverify stage's); the rest
// of the work is the dispatcher actor's, in its own actor system.
type Dispatcher struct {
	cfg    LeaderConfig
	system *actor.ActorSystem
	stop   func() // the remote's, or the cluster's
	pid    *actor.PID
	d      *dispatcher

	// free is the credits free over the verifiers in service, less those
	// TryStart took for passes the actor has not placed yet.
	free    atomic.Int64
	pending sync.WaitGroup // passes taken and not ended
	onFree  atomic.Pointer[func()]
	nextID  uint64
	spare   chan *job // jobs to reuse (getJob, putJob)

	sent, packets, tooBig atomic.Uint64
}

// NewDispatcher starts the leader's remote and the dispatcher actor, and
// starts probing cfg.Verifiers.
func NewDispatcher(cfg LeaderConfig) (*Dispatcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Credits == 0 {
		cfg.Credits = DefaultCredits
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ProbeEvery == 0 {
		cfg.ProbeEvery = DefaultProbeEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	v, err := sigverify.NewVerifier(cfg.Verify)
	if err != nil {
		return nil, err
	}
	x := &Dispatcher{cfg: cfg, spare: make(chan *job, spareJobs)}
	// The topology is watched before the remote starts, so that the
	// first members the cluster finds are not missed; the dispatcher
	// hears of them once it is spawned, after the start (its address,
	// where the replies go, is the remote's).
	var topo *topology
	system, stop, err := startRemote(cfg.Listen, cfg.TLS, cfg.Logger, cfg.Cluster, nil, func(system *actor.ActorSystem) {
		x.system = system
		if cfg.Cluster != nil {
			topo = x.watchTopology()
		}
	})
	if err != nil {
		v.Close()
		return nil, err
	}
	x.stop = stop
	// The audit's copies: a pass's sample fits a batch or a few.
	pool, err := packet.NewPool(packet.Config{MaxIdle: 4})
	if err != nil {
		stop()
		v.Close()
		return nil, err
	}
	x.d = newDispatcher(x, v, pool)
	x.pid = system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return x.d }))
	if topo != nil {
		topo.ready()
	}
	for _, a := range cfg.Verifiers {
		system.Root.Send(x.pid, joinMsg{addr: a})
	}
	return x, nil
}

// Addr returns the address the leader's remote serves, host:port.
func (x *Dispatcher) Addr() string { return x.system.Address() }

// Join adds the verifier at addr (cluster membership found it), and
// Leave takes it out of service: its passes in flight are checked here.
func (x *Dispatcher) Join(addr string)  { x.system.Root.Send(x.pid, joinMsg{addr: addr}) }
func (x *Dispatcher) Leave(addr string) { x.system.Root.Send(x.pid, leaveMsg{addr: addr}) }

// TryStart takes a pass if a verifier has a credit free: it parses the
// batches' live packets (sigverify.Parse: failures are discarded here,
// counted in the packets' outcomes) and sends the rest to be checked.
// It reports false, having changed nothing, when no credit is free; a
// pass larger than MaxRequestBytes it refuses after the parse (counted,
// TooBig), and the caller checks it, parse kept. When it reports true
// the batches are the Dispatcher's until done is called (on another
// goroutine, or inside TryStart when no packet needs a check): the
// caller must hold each batch's sole reference and leave it alone until
// then. Then every packet's verdict is applied, as sigverify.Verifier
// applies its own (a bad signature discarded with OutcomeBadSignature,
// its simple-vote flag cleared). span is the pass's span, the parent of
// the verifier's.
func (x *Dispatcher) TryStart(batches []*packet.Batch, span trace.SpanContext, done func()) bool {
	if !takeCredit(&x.free) {
		return false
	}
	sigverify.Parse(batches...)
	j := x.getJob()
	var data, sizes int
	j.pkts, data, sizes = collect(j.pkts, batches)
	n := len(j.pkts)
	size := data + sizes + n*txview.LayoutSize
	if size > MaxRequestBytes-1024 { // the request's other fields
		x.putJob(j)
		x.free.Add(1)
		x.tooBig.Add(1)
		return false
	}
	if n == 0 {
		x.putJob(j)
		x.free.Add(1)
		done()
		return true
	}
	x.nextID++
	j.id, j.batches, j.done = x.nextID, batches, done
	j.req.encode(j.id, j.pkts, data, sizes, span)
	x.sent.Add(1)
	x.packets.Add(uint64(n))
	x.pending.Add(1)
	x.system.Root.Send(x.pid, j)
	return true
}

// spareJobs bounds the jobs (and their requests' buffers, up to
// MaxRequestBytes each) kept for reuse.
const spareJobs = 8

// getJob returns a spare job, or a new one.
func (x *Dispatcher) getJob() *job {
	select {
	case j := <-x.spare:
		return j
	default:
		return &job{req: newEncoded()}
	}
}

// putJob keeps j for reuse, if there is room: its pass has ended and
// its request was answered or never sent (see encoded).
func (x *Dispatcher) putJob(j *job) {
	clear(j.pkts)
	j.pkts, j.batches, j.done, j.w, j.timer, j.id = j.pkts[:0], nil, nil, nil, nil, 0
	select {
	case x.spare <- j:
	default:
	}
}

// takeCredit takes one of c's credits if one is free.
func takeCredit(c *atomic.Int64) bool {
	for {
		f := c.Load()
		if f <= 0 {
			return false
		}
		if c.CompareAndSwap(f, f-1) {
			return true
		}
	}
}

// Free reports how many passes TryStart would take now: the credits
// free over the verifiers in service.
func (x *Dispatcher) Free() int { return max(0, int(x.free.Load())) }

// OnFree sets f, called on the dispatcher's goroutine when a verifier
// comes into service with its credits (not when a pass ends: its done
// says so).
func (x *Dispatcher) OnFree(f func()) { x.onFree.Store(&f) }

// Wait returns once every pass TryStart took has ended: its verdicts
// applied or its checks done here. It takes at most about Timeout.
func (x *Dispatcher) Wait() { x.pending.Wait() }

// Stats returns the counts so far.
func (x *Dispatcher) Stats() Stats {
	st := x.d.stats()
	st.Sent, st.Packets, st.TooBig = x.sent.Load(), x.packets.Load(), x.tooBig.Load()
	st.Credits = x.Free()
	return st
}

// Close waits for the passes under way (Wait), then stops the leader's
// remote and the local checks.
func (x *Dispatcher) Close() {
	x.pending.Wait()
	x.system.Root.StopFuture(x.pid).Wait()
	x.stop()
	x.d.verifier.Close()
}
