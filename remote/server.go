package remote

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/remote/wire"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
)

// ActorName is the name a verifier's worker actor is spawned under: a
// leader addresses it as actor.NewPID(address, ActorName).
const ActorName = "sigverify"

// ServerConfig configures a verifier process (tpu verifier).
type ServerConfig struct {
	// Listen is the host:port the verifier's gRPC server binds (port 0:
	// a free one, see Server.Addr). Required.
	Listen string
	// Verify configures its signature checks (backend, workers).
	Verify sigverify.VerifyConfig
	// TLS, when not nil, authenticates both ends of every connection
	// (mutual TLS); nil means plaintext, for loopback only.
	TLS *TLS
	// Trace, when not nil, records a span per request, a child of the
	// leader's (hop sigverify.remote). Nil: none.
	Trace *trace.Provider
	// Logger receives protoactor's lines and the verifier's. Nil: discard.
	Logger *slog.Logger
	// Cluster, when not nil, makes the verifier a member of a cluster
	// whose leaders find it there (ClusterConfig). Nil: leaders name it.
	Cluster *ClusterConfig
	// Tamper, when not nil, gets each reply's verdicts (wire.Verdict
	// bytes) before they are sent, and may change them: tests play a
	// faulty verifier with it (tpu's own test binary sets it for tpu
	// verifier; no flag does). Nil in real use.
	Tamper func(verdicts []byte)
}

// ServerStats counts a verifier's work.
type ServerStats struct {
	Requests   uint64 // requests answered
	Packets    uint64 // packets checked
	Verified   uint64 // of those, verified
	Refused    uint64 // packets refused: they did not parse as their layout says
	Malformed  uint64 // requests that could not be read (answered with an error)
	Signatures uint64 // signatures checked
}

// Server is a verifier: an actor system whose remote serves the
// sigverify worker actor (ActorName). It keeps no state between
// requests.
type Server struct {
	system *actor.ActorSystem
	stop   func() // the remote's, or the cluster's
	w      *worker
}

// worker checks the requests, one at a time, on every core: each request
// is a whole pass, which its Verifier spreads over its workers.
type worker struct {
	verifier *sigverify.Verifier
	pool     *packet.Pool
	hop      *trace.Hop // nil: no tracing
	batches  []*packet.Batch
	flip     bool          // tests: answer every verdict inverted (a lying verifier)
	refuse   bool          // tests: refuse every packet
	gate     chan struct{} // tests: when not nil, each request waits for a receive from it
	onRecv   func()        // tests: when not nil, called as each request arrives
	tamper   func([]byte)  // ServerConfig.Tamper

	requests, packets, verified, refused, malformed, signatures atomic.Uint64
}

// Serve starts a verifier on cfg.Listen.
func Serve(cfg ServerConfig) (_ *Server, err error) {
	if cfg.Listen == "" {
		return nil, errors.New("remote: a verifier needs a listen address")
	}
	v, err := sigverify.NewVerifier(cfg.Verify)
	if err != nil {
		return nil, err
	}
	pool, err := packet.NewPool(packet.Config{BatchCap: packet.MaxBatchCap, MaxIdle: 8})
	if err != nil {
		v.Close()
		return nil, err
	}
	w := &worker{verifier: v, pool: pool, tamper: cfg.Tamper}
	if cfg.Trace != nil {
		w.hop = cfg.Trace.Hop("sigverify.remote")
	}
	props := actor.PropsFromProducer(func() actor.Actor { return w })
	system, stop, err := startRemote(cfg.Listen, cfg.TLS, cfg.Logger, cfg.Cluster, props, nil)
	if err != nil {
		v.Close()
		return nil, err
	}
	if _, err := system.Root.SpawnNamed(props, ActorName); err != nil {
		stop()
		v.Close()
		return nil, fmt.Errorf("remote: spawn the worker: %w", err)
	}
	return &Server{system: system, stop: stop, w: w}, nil
}

// startRemote starts an actor system with a remote bound to listen, a
// member of cl if it is not nil (a verifier's, whose worker is worker;
// a leader's, a client, when worker is nil). before, when not nil, gets
// the actor system before the remote starts. stop stops the remote at
// once, and the actor system.
func startRemote(listen string, tlsCfg *TLS, log *slog.Logger, cl *ClusterConfig, worker *actor.Props, before func(*actor.ActorSystem)) (_ *actor.ActorSystem, stop func(), _ error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, nil, fmt.Errorf("remote: listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, nil, fmt.Errorf("remote: listen address %q: bad port", listen)
	}
	// remote.Start panics when it cannot listen: find out first.
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, nil, fmt.Errorf("remote: %w", err)
	}
	if port == 0 {
		port = l.Addr().(*net.TCPAddr).Port
	}
	l.Close()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// protoactor's info lines (every connection made or lost) show at
	// debug level, as the graph's do.
	actorLogs := slog.New(trace.QuietInfo(log.Handler())).With("lib", "protoactor")
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return actorLogs }))
	opts, err := tlsCfg.options()
	if err != nil {
		return nil, nil, err
	}
	if before != nil {
		before(system)
	}
	rcfg := remote.Configure(host, port, append(opts, baseOptions()...)...)
	if cl != nil {
		c, err := startCluster(system, *cl, worker != nil, rcfg, worker)
		if err != nil {
			return nil, nil, err
		}
		return system, func() {
			// Cluster.Shutdown sets gossip state a client lacks: stop
			// the parts by hand, the provider's polling (and a member's
			// membership endpoint) with them.
			shutdownProvider(c.Config.ClusterProvider)
			c.Remote.Shutdown(false)
			system.Shutdown()
		}, nil
	}
	r := remote.NewRemote(system, rcfg)
	if err := startOrErr(r); err != nil {
		return nil, nil, err
	}
	return system, func() {
		r.Shutdown(false)
		system.Shutdown()
	}, nil
}

// startOrErr starts r, turning its panic (a port taken since the probe)
// into an error.
func startOrErr(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("remote: start: %v", p)
		}
	}()
	r.Start()
	return nil
}

// Addr returns the address the verifier serves, host:port.
func (s *Server) Addr() string { return s.system.Address() }

// Stats returns the verifier's counts so far.
func (s *Server) Stats() ServerStats {
	w := s.w
	return ServerStats{Requests: w.requests.Load(), Packets: w.packets.Load(), Verified: w.verified.Load(),
		Refused: w.refused.Load(), Malformed: w.malformed.Load(), Signatures: w.signatures.Load()}
}

// Stop stops the verifier: its server at once (requests under way are
// lost to their leader, which redoes them), then its workers.
func (s *Server) Stop() {
	s.stop()
	s.w.verifier.Close()
}

func (w *worker) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *wire.VerifyRequest:
		if w.onRecv != nil {
			w.onRecv()
		}
		if w.gate != nil {
			<-w.gate
		}
		ctx.Respond(w.check(msg))
	case *wire.Probe:
		ctx.Respond(&wire.ProbeReply{Workers: uint32(w.verifier.Workers())})
	}
}

// check verifies req's packets and returns the reply.
func (w *worker) check(req *wire.VerifyRequest) *wire.VerifyReply {
	w.requests.Add(1)
	reply := &wire.VerifyReply{Id: req.Id}
	if err := checkShape(req); err != nil {
		w.malformed.Add(1)
		reply.Error = err.Error()
		return reply
	}
	var span trace.Span
	if w.hop != nil {
		span = w.hop.Start(parent(req), 0, false)
	}
	// The packets, copied into batches of this process's pool.
	off := 0
	var b *packet.Batch
	for _, size := range req.Sizes {
		if b == nil || b.Full() {
			b = w.pool.Get()
			w.batches = append(w.batches, b)
		}
		b.Next().Fill(req.Data[off : off+int(size)])
		off += int(size)
	}
	st := w.verifier.Verify(w.batches...)
	reply.Verdicts = make([]byte, len(req.Sizes))
	i := 0
	var refused uint64
	for _, b := range w.batches {
		for j := range b.Packets() {
			p := b.At(j)
			v := wire.Verdict_VERDICT_VERIFIED
			switch {
			case p.Discarded() && p.Meta.Outcome == packet.OutcomeBadSignature:
				v = wire.Verdict_VERDICT_BAD_SIGNATURE
			case p.Discarded() || string(p.Meta.Parsed[:]) != string(req.Layouts[i*len(p.Meta.Parsed):(i+1)*len(p.Meta.Parsed)]):
				v = wire.Verdict_VERDICT_REFUSED
				refused++
			}
			if w.flip && v != wire.Verdict_VERDICT_REFUSED {
				v = wire.Verdict_VERDICT_VERIFIED - v
			}
			if w.refuse {
				v = wire.Verdict_VERDICT_REFUSED
			}
			reply.Verdicts[i] = byte(v)
			i++
		}
		b.Release()
	}
	clear(w.batches)
	w.batches = w.batches[:0]
	if w.tamper != nil {
		w.tamper(reply.Verdicts)
	}
	w.packets.Add(uint64(len(req.Sizes)))
	w.verified.Add(uint64(st.Verified))
	w.refused.Add(refused)
	w.signatures.Add(uint64(st.Signatures))
	span.SetAttributes(attribute.Int("tpu.packets", len(req.Sizes)), attribute.Int("tpu.signatures", st.Signatures))
	span.End()
	return reply
}

// shutdownProvider stops a cluster provider's polling. The automanaged
// provider's Shutdown marks itself shut down, then closes its membership
// endpoint, which a client never started (a nil pointer): the mark is
// what stops a client's polling, and the panic after it is dropped.
func shutdownProvider(p interface{ Shutdown(bool) error }) {
	defer func() { _ = recover() }()
	p.Shutdown(true)
}
