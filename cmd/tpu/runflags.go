package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking/bankingtrace"
	"github.com/tpugo/tpu/httpguard"
	"github.com/tpugo/tpu/remote"
	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
)

// tpu run's flags, and the configs they make: graphConfig for the graph
// (its errors are usage errors), rpcConfig for the JSON-RPC server.

type runFlags struct {
	addr, ledger, method, handoff, backend, syncMode                      string
	traceOut, otlp, metricsAddr, summaryJSON, logLevel, seed              string
	cpuProfile, memProfile, rpcAddr                                       string
	duration                                                              time.Duration
	reset, noGen, pprof, rpcFaucet                                        bool
	txHistory                                                             bool
	rateSet                                                               bool // --rate was given
	rate, invalid, traceSample, v0                                        float64
	accounts, workers, batchSize, tracerEvery, sendBatch, capacity, count int
	poolWarm, bankingPeer, keyCache                                       int
	sockets, procs                                                        int
	genesisSeed                                                           string
	blockCostLimit                                                        uint64
	contention                                                            loadgen.Contention
	fetchGRO                                                              bool

	// The knobs that shape latency. Their flags default to the configs'
	// own defaults, so 0 is never needed to mean "the default" and is
	// refused where the config would read it so.
	fetchCoalesce, slotTime, dedupMaxAge     time.Duration
	fetchCredits, bankingCredits, maxPending int
	dedupBits                                uint64

	// The forwarder: verified non-vote packets to another TPU.
	forwardTo, forwardOver string
	forwardRate            int
	// The banking trace: every batch entering banking, to a directory.
	bankingTrace    string
	bankingTraceMax int64
	// The RPC server's limits (see rpc.Config).
	rpcMaxConns, rpcMaxConnsPerIP, rpcAirdropRequests, rpcExpensivePerSec int
	rpcMaxBlockTransactions                                               int
	rpcHistorySlots                                                       uint64
	rpcAirdropPerRecipient, rpcAirdropLamports                            uint64
	rpcAirdropWindow                                                      time.Duration
	wsAddr                                                                string // the websocket PubSub's (pubsub.go)

	// Remote verifiers (runremote.go).
	verifiers, remoteListen   string
	clusterSeeds, clusterName string
	remoteCredits             int
	remoteTimeout             time.Duration
	remoteAudit               float64
	sigverifyLocal            bool
	remoteTLS                 tlsFlags
	// The QUIC TPU (runquic.go).
	quicAddr, stakes, send    string
	quicConns, quicIdentities int
	genesisValidators         int
}

// settleDefaults gives the flags whose default depends on another one
// their value, after parsing, where they were not given: with --no-gen
// tpu run is a server for clients, so it runs until a signal
// (--duration 0) and keeps transaction history (getTransaction needs
// it); with the load generator it is a measurement run, which keeps no
// history (it costs banking throughput: about six Pebble keys a
// transaction).
func settleDefaults(fs *flag.FlagSet, f *runFlags) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	f.rateSet = set["rate"]
	if !set["tx-history"] {
		f.txHistory = f.noGen
	}
	if f.noGen && !set["duration"] {
		f.duration = 0
	}
}

// defineRunFlags defines tpu run's flags on fs; parsing fs fills the
// result.
func defineRunFlags(fs *flag.FlagSet) *runFlags {
	f := new(runFlags)
	fs.StringVar(&f.addr, "tpu-addr", "127.0.0.1:8003", "UDP address fetch listens on")
	fs.StringVar(&f.quicAddr, "tpu-quic-addr", quicAuto, "QUIC address of the TPU (ALPN solana-tpu), where real senders send; auto: --tpu-addr's port + 6 (a free port when that is 0); off: UDP only")
	fs.StringVar(&f.stakes, "stakes", "", "JSON file of base58 identity -> stake in lamports, which the QUIC TPU's admission and QoS weigh instead of the ledger's stake accounts (empty: the ledger's, see --genesis-validators)")
	fs.IntVar(&f.genesisValidators, "genesis-validators", 4, "staked validators a new ledger's genesis holds, each a vote account and a stake account of 1,000 SOL; the QUIC TPU weighs peers by these stake accounts, and the load generator's QUIC identities are these validators' first (--quic-identities beyond it are unstaked)")
	fs.StringVar(&f.send, "send", sendUDP, "how the load generator sends: udp (datagrams, sendmmsg) or quic (one stream per transaction to --tpu-quic-addr, as real senders do; on one machine its client side takes CPU the pipeline would otherwise use)")
	fs.IntVar(&f.quicConns, "quic-conns", 4, "QUIC connections the load generator opens with --send quic")
	fs.IntVar(&f.quicIdentities, "quic-identities", 4, "identities the load generator's QUIC connections present, round-robin: the genesis validators' first, so staked up to --genesis-validators")
	fs.IntVar(&f.sockets, "tpu-sockets", 1, "UDP sockets bound to --tpu-addr (SO_REUSEPORT), each with its own reader")
	fs.BoolVar(&f.fetchGRO, "fetch-gro", false, "let the kernel coalesce runs of datagrams into one read (UDP_GRO, Linux): cheaper reads of segmenting senders such as the load generator, but a dropped run then counts once in socket_dropped, a lower bound")
	fs.StringVar(&f.ledger, "ledger", "ledger", "ledger directory")
	fs.BoolVar(&f.reset, "reset", false, "delete the ledger and start from genesis (only a directory holding a tpu ledger and nothing else, or an empty one; never one another process holds)")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to send load (with --no-gen: how long to run, default 0: until a signal)")
	fs.BoolVar(&f.noGen, "no-gen", false, "run as a server only, without the load generator")
	fs.Float64Var(&f.rate, "rate", 0, "send open-loop at this many transactions per second, on a fixed schedule, and measure latency from it (left out: closed-loop, as fast as the pipeline accepts)")
	fs.IntVar(&f.count, "count", 0, "transactions to prepare (0: rate x duration, or closed-loop the sigverify ceiling x duration, at most 3,000,000; a load that runs out before --duration is reported as exhausted)")
	fs.TextVar(&f.contention, "contention", loadgen.ContentionNone, "write-lock contention of the load: none, same-batch-only or full")
	fs.Float64Var(&f.invalid, "invalid-fraction", 0, "share of the load that is invalid: bad signatures, duplicates, malformed bytes, stale blockhashes, unfunded payers")
	fs.Float64Var(&f.v0, "v0-fraction", 0, "share of the load sent as v0 transactions that load their recipient through the genesis lookup table")
	fs.IntVar(&f.sendBatch, "send-batch", 64, "datagrams per sendmmsg call of the load generator")
	fs.IntVar(&f.bankingPeer, "banking-peer", 0, "run tpu bench banking (its defaults, with the run's method, handoff and workers) for this many iterations in this process after the load, and report banking's CPU a transaction here against there: a ratio that holds on a noisy machine (300: about 3 s, about 200 samples of the bench's banking); also half as many before the load, its heap not yet warmed as the run's, and the ratio against those; 0: none")
	fs.IntVar(&f.poolWarm, "pool-warm", 1024, "packet batches allocated and touched while the load is signed, so that the load's first seconds do not pay the page faults of fresh memory (as Agave's fetch stage warms its recycler); at most the memory bound, 0: none")
	fs.StringVar(&f.seed, "seed", "tpu", "genesis seed (keys derive from it; see bank.GenesisConfig)")
	fs.IntVar(&f.accounts, "accounts", 1000, "genesis accounts, created with a new ledger")
	fs.StringVar(&f.genesisSeed, "genesis-seed", "", "makes a new ledger's first blockhash reproducible (empty: random, so transactions signed for an earlier ledger cannot replay)")
	fs.StringVar(&f.backend, "sigverify-backend", sigverify.DefaultBackend, sigverify.BackendUsage())
	fs.IntVar(&f.keyCache, "sigverify-key-cache", sigverify.DefaultKeyCache, keyCacheUsage)
	fs.StringVar(&f.method, "block-production-method", "greedy", "greedy, prio-graph or unbatched")
	fs.IntVar(&f.workers, "num-workers", 2, "banking workers")
	fs.StringVar(&f.handoff, "handoff", "refcount", "refcount (every consumer of a verified batch, banking among them, shares it) or copy (each gets a copy)")
	fs.StringVar(&f.forwardTo, "forward-to", "", "forward verified non-vote packets to the TPU at host:port (the next leader's tpuQuic, or its UDP tpu with --forward-over udp), rate-limited by --forward-rate (empty: no forwarding)")
	fs.StringVar(&f.forwardOver, "forward-over", "quic", "how --forward-to forwards: quic (a stream per packet, presenting this node's identity, as Agave forwards) or udp (datagrams)")
	fs.IntVar(&f.forwardRate, "forward-rate", stages.DefaultForwardRate, "most packets per second --forward-to sends; beyond it they are dropped and counted (rate_limited)")
	fs.StringVar(&f.bankingTrace, "banking-trace", "", "record every batch entering banking, and the slot boundaries, in rotating files in this directory (replay with tpu replay DIR); needs a new ledger (empty: no recording)")
	fs.Int64Var(&f.bankingTraceMax, "banking-trace-max", bankingtrace.DefaultMaxBytes, "most bytes --banking-trace keeps; the oldest files are deleted beyond it")
	fs.IntVar(&f.batchSize, "batch-size", 64, "packets per batch")
	fs.IntVar(&f.capacity, "buffer", 100_000, "transactions banking buffers before it evicts the lowest priority (the closed-loop generator waits while it holds half of them, at most 32768)")
	fs.DurationVar(&f.fetchCoalesce, "fetch-coalesce", stages.DefaultCoalesce, "how long fetch holds a partly filled batch for more packets before sending it")
	fs.IntVar(&f.fetchCredits, "fetch-credits", stages.DefaultBudget, "batches in flight allowed from fetch to sigverify; beyond them fetch drops what it reads (no_credits)")
	fs.IntVar(&f.bankingCredits, "banking-credits", stages.DefaultBudget, "batches in flight allowed from sigverify to banking; beyond them sigverify drops what it verified (no_credits)")
	fs.IntVar(&f.maxPending, "sigverify-max-pending", stages.DefaultMaxPending, "live packets one sigverify pass checks (at most 2 passes under way); the excess is shed, fairly by source")
	fs.Uint64Var(&f.dedupBits, "dedup-bits", sigverify.DefaultDedupBits, "size of sigverify's duplicate filter in bits, 64 to 2^32")
	fs.DurationVar(&f.dedupMaxAge, "dedup-max-age", sigverify.DefaultDedupMaxAge, "longest the duplicate filter runs before it is reset (it is also reset when its false-positive rate reaches 0.1%)")
	fs.DurationVar(&f.slotTime, "slot-time", stages.DefaultSlotTime, fmt.Sprintf("the slot clock's period (at least %v)", stages.MinSlotTime))
	fs.StringVar(&f.syncMode, "sync", "sync", "ledger commits: sync (fsync each slot) or nosync")
	fs.BoolVar(&f.txHistory, "tx-history", false, "keep each committed transaction and its meta in the ledger, for getTransaction and getSignaturesForAddress (default: on with --no-gen, off with the load generator, whose throughput it costs)")
	fs.Uint64Var(&f.blockCostLimit, "block-cost-limit", 0, "compute units per slot (0: mainnet's 100M, SIMD-0286); lower it to make transactions wait in the buffer")
	fs.Float64Var(&f.traceSample, "trace-sample", 0, "fraction of batches whose spans are recorded (0: metrics only)")
	fs.IntVar(&f.tracerEvery, "tracer-every", 0, "flag one packet in N as a tracer, recorded end to end (0: none)")
	fs.StringVar(&f.traceOut, "trace-out", "", "write spans to this file, JSON lines (read with tpu trace analyze)")
	fs.StringVar(&f.otlp, "otlp-endpoint", "", "send spans over OTLP gRPC to host:port (e.g. a local Jaeger)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9090); no host (:9090) means 127.0.0.1:9090, every interface must be named (0.0.0.0:9090)")
	fs.BoolVar(&f.pprof, "pprof", false, "serve the Go heap profile at /debug/pprof/heap beside --metrics-addr's /metrics, one request at a time")
	fs.StringVar(&f.rpcAddr, "rpc-addr", "127.0.0.1:8899", "serve Solana JSON-RPC here (empty: no RPC)")
	fs.IntVar(&f.rpcMaxConns, "rpc-max-conns", rpc.DefaultMaxConns, "RPC connections open at once (lowered to the descriptor limit less 256); at the cap a new one takes the place of the longest idle, and with none idle waits in the kernel's accept queue")
	fs.IntVar(&f.rpcMaxConnsPerIP, "rpc-max-conns-per-ip", rpc.DefaultMaxConnsPerIP, "RPC connections open at once from one IP address (an IPv6 one by its /64); more are answered HTTP 429")
	fs.IntVar(&f.rpcExpensivePerSec, "rpc-expensive-per-sec", rpc.DefaultExpensivePerSec, "each client address's budget for expensive RPC work a second, in signature checks: a signature checked or a transaction simulated costs 1, 16 history slots searched 1, 10 getSignaturesForAddress entries 1; past it, error -32005 rate limited")
	fs.Uint64Var(&f.rpcHistorySlots, "rpc-history-slots", rpc.DefaultHistorySlots, "slots before the blockhash window one RPC request may search with searchTransactionHistory; older signatures read null")
	fs.IntVar(&f.rpcMaxBlockTransactions, "rpc-max-block-transactions", rpc.DefaultMaxBlockTransactions, "transactions getBlock lists in one answer; a larger block is refused unless asked with transactionDetails none")
	fs.DurationVar(&f.rpcAirdropWindow, "rpc-airdrop-window", rpc.DefaultAirdropWindow, "the period requestAirdrop's limits count over")
	fs.Uint64Var(&f.rpcAirdropPerRecipient, "rpc-airdrop-per-recipient", rpc.DefaultAirdropPerRecipient, "lamports one account may receive by airdrop per --rpc-airdrop-window")
	fs.Uint64Var(&f.rpcAirdropLamports, "rpc-airdrop-lamports", rpc.DefaultAirdropLamports, "lamports given by airdrop per --rpc-airdrop-window, to all accounts together")
	fs.IntVar(&f.rpcAirdropRequests, "rpc-airdrop-requests", rpc.DefaultAirdropRequests, "airdrops per --rpc-airdrop-window, to all accounts together")
	fs.BoolVar(&f.rpcFaucet, "rpc-faucet", false, "serve requestAirdrop on an --rpc-addr other machines can reach (off there by default, as Agave without --rpc-faucet-address; always on for loopback)")
	fs.StringVar(&f.wsAddr, "ws-addr", wsAuto, "serve Solana's websocket PubSub here (auto: the --rpc-addr port + 1, as Agave's 8899/8900, or a free port when that is 0; empty: none)")
	fs.StringVar(&f.verifiers, "verifiers", "", "send sigverify passes to these verifiers (tpu verifier --listen), host:port comma-separated, each with --remote-credits passes in flight; what they cannot take is checked here")
	fs.StringVar(&f.clusterSeeds, "cluster-seeds", "", "find verifiers through cluster membership (protoactor's automanaged provider): the members' membership endpoints (tpu verifier --cluster-port), host:port comma-separated; a verifier that joins gets work, one that leaves is drained")
	fs.StringVar(&f.clusterName, "cluster-name", remote.DefaultClusterName, "the verifier cluster's name (with --cluster-seeds)")
	fs.StringVar(&f.remoteListen, "remote-listen", "127.0.0.1:0", "where this leader's protoactor remote listens for the verifiers' replies (with --verifiers)")
	fs.IntVar(&f.remoteCredits, "remote-credits", remote.DefaultCredits, "sigverify passes one verifier has in flight at most")
	fs.DurationVar(&f.remoteTimeout, "remote-timeout", remote.DefaultTimeout, "how long a pass waits for a verifier's verdicts before it is checked here (counted, remote_timeout) and the verifier taken out of service until it answers")
	fs.Float64Var(&f.remoteAudit, "remote-audit", 0.01, "fraction of the verifiers' verdicts checked again here, at random; a verifier caught giving a wrong one is cut off")
	fs.BoolVar(&f.sigverifyLocal, "sigverify-local", true, "check passes here when no verifier has a credit free (false: they wait for one; with --verifiers)")
	f.remoteTLS.define(fs)
	fs.StringVar(&f.summaryJSON, "summary-json", "", "write the final summary as JSON to this file")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error (debug also shows protoactor's logs)")
	fs.IntVar(&f.procs, "gomaxprocs", 0, "Go scheduler Ps for the run (0: one per core and one more, so that fetch, banking and the load generator are not queued behind the signature checks)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write the CPU profile of the load (the one the CPU by stage is measured with) to this file")
	fs.StringVar(&f.memProfile, "memprofile", "", "write an allocation profile to this file, and FILE.base before the load (pprof -base FILE.base FILE)")
	return f
}

// graphConfig turns the flags into the graph's config. Its errors are
// usage errors.
func graphConfig(f runFlags) (stages.Config, error) {
	var cfg stages.Config
	if err := checkKnobs(f); err != nil {
		return cfg, err
	}
	cfg.Fetch = stages.FetchConfig{Addr: f.addr, Sockets: f.sockets, TracerEvery: f.tracerEvery, Coalesce: f.fetchCoalesce, GRO: f.fetchGRO}
	var err error
	if cfg.Fetch.QUIC, err = quicConfig(f); err != nil {
		return cfg, err
	}
	if err := checkSend(f, cfg.Fetch.QUIC); err != nil {
		return cfg, err
	}
	cfg.BatchSize = f.batchSize
	cfg.FetchBudget, cfg.BankingBudget = f.fetchCredits, f.bankingCredits
	cfg.Sigverify.MaxPending = f.maxPending
	cfg.Sigverify.Dedup = sigverify.DedupConfig{Bits: f.dedupBits, MaxAge: f.dedupMaxAge}
	if err := cfg.Sigverify.Dedup.Validate(); err != nil {
		return cfg, fmt.Errorf("--dedup-bits: %w", err) // the max age is checked above
	}
	bc := &cfg.Banking
	bc.Bank = bank.Config{Dir: f.ledger, Genesis: bank.GenesisConfig{Seed: f.seed, Accounts: f.accounts, BlockhashSeed: f.genesisSeed, Validators: f.genesisValidators},
		BlockCostLimit: f.blockCostLimit, Reset: f.reset, NoTxHistory: !f.txHistory}
	if bc.Bank.Sync, err = ledger.ParseSyncMode(f.syncMode); err != nil {
		return cfg, err
	}
	bc.SlotTime = f.slotTime
	if f.slotTime > 0 && f.slotTime < stages.MinSlotTime {
		return cfg, fmt.Errorf("--slot-time %v: at least %v", f.slotTime, stages.MinSlotTime)
	}
	bc.Scheduler = scheduler.Config{Workers: f.workers, Capacity: f.capacity}
	if bc.Scheduler.Method, err = scheduler.ParseMethod(f.method); err != nil {
		return cfg, err
	}
	if bc.Scheduler.Handoff, err = scheduler.ParseHandoff(f.handoff); err != nil {
		return cfg, err
	}
	if f.forwardTo != "" {
		a, err := net.ResolveUDPAddr("udp", f.forwardTo)
		if err != nil {
			return cfg, fmt.Errorf("--forward-to %q: want host:port: %w", f.forwardTo, err)
		}
		if cfg.Forward.To = netip.AddrPortFrom(a.AddrPort().Addr().Unmap(), a.AddrPort().Port()); cfg.Forward.To.Port() == 0 {
			return cfg, fmt.Errorf("--forward-to %q: want host:port, with a port", f.forwardTo)
		}
	}
	cfg.Forward.Rate = f.forwardRate
	switch f.forwardOver {
	case "quic":
		cfg.Forward.QUIC, cfg.Forward.Identity = true, bank.CollectorKey(f.seed)
	case "udp":
	default:
		return cfg, fmt.Errorf("--forward-over %q: want quic or udp", f.forwardOver)
	}
	if f.forwardRate > stages.MaxForwardRate {
		return cfg, fmt.Errorf("--forward-rate %d: at most %d", f.forwardRate, stages.MaxForwardRate)
	}
	if f.bankingTraceMax <= 0 {
		return cfg, fmt.Errorf("--banking-trace-max %d: must be more than 0 bytes (leave the flag out for 1 GiB)", f.bankingTraceMax)
	}
	if f.invalid < 0 || f.invalid > 1 {
		return cfg, fmt.Errorf("--invalid-fraction %v: want 0 to 1", f.invalid)
	}
	if !(f.v0 >= 0 && f.v0 <= 1) {
		return cfg, fmt.Errorf("--v0-fraction %v: want 0 to 1", f.v0)
	}
	if f.rateSet && !(f.rate > 0) { // NaN too
		return cfg, fmt.Errorf("--rate %v: must be more than 0 (leave the flag out for closed-loop load, as fast as the pipeline accepts)", f.rate)
	}
	if f.rate < 0 || f.count < 0 || f.duration < 0 {
		return cfg, errors.New("--rate, --count and --duration must not be negative")
	}
	if f.bankingPeer < 0 {
		return cfg, fmt.Errorf("--banking-peer %d: must not be negative (0: none)", f.bankingPeer)
	}
	if f.poolWarm < 0 {
		return cfg, fmt.Errorf("--pool-warm %d: must not be negative (0: warm none)", f.poolWarm)
	}
	if !f.noGen && f.duration == 0 && f.count == 0 {
		return cfg, errors.New("the load generator needs --duration or --count")
	}
	// The one lookup of --sigverify-backend: the graph, the RPC and the
	// ceiling all take this value.
	if cfg.Sigverify.Verify.Backend, err = newBackend(f.backend, f.keyCache); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// checkKnobs refuses a knob below 1 (below 1 ns for a duration): the
// configs read 0 as their default, which the flag already defaults to, so
// a 0 given on the command line would silently mean something else.
// maxProcs bounds --gomaxprocs: far above anything useful on this kind of
// machine, far below what exhausts the process's threads.
const maxProcs = 256

func checkKnobs(f runFlags) error {
	var errs []error
	for _, k := range []struct {
		name string
		v    int64
		show any // as given
	}{
		{"fetch-coalesce", int64(f.fetchCoalesce), f.fetchCoalesce},
		{"fetch-credits", int64(f.fetchCredits), f.fetchCredits},
		{"banking-credits", int64(f.bankingCredits), f.bankingCredits},
		{"sigverify-max-pending", int64(f.maxPending), f.maxPending},
		{"dedup-max-age", int64(f.dedupMaxAge), f.dedupMaxAge},
		{"slot-time", int64(f.slotTime), f.slotTime},
		{"tpu-sockets", int64(f.sockets), f.sockets},
		{"buffer", int64(f.capacity), f.capacity},
		{"num-workers", int64(f.workers), f.workers},
		{"batch-size", int64(f.batchSize), f.batchSize},
		{"accounts", int64(f.accounts), f.accounts},
		{"forward-rate", int64(f.forwardRate), f.forwardRate},
		{"rpc-max-conns", int64(f.rpcMaxConns), f.rpcMaxConns},
		{"rpc-max-conns-per-ip", int64(f.rpcMaxConnsPerIP), f.rpcMaxConnsPerIP},
		{"rpc-expensive-per-sec", int64(f.rpcExpensivePerSec), f.rpcExpensivePerSec},
		{"rpc-max-block-transactions", int64(f.rpcMaxBlockTransactions), f.rpcMaxBlockTransactions},
		{"rpc-airdrop-window", int64(f.rpcAirdropWindow), f.rpcAirdropWindow},
		{"rpc-airdrop-requests", int64(f.rpcAirdropRequests), f.rpcAirdropRequests},
		{"rpc-history-slots", int64(min(f.rpcHistorySlots, 1)), f.rpcHistorySlots},
		{"rpc-airdrop-per-recipient", int64(min(f.rpcAirdropPerRecipient, 1)), f.rpcAirdropPerRecipient},
		{"rpc-airdrop-lamports", int64(min(f.rpcAirdropLamports, 1)), f.rpcAirdropLamports},
		{"remote-credits", int64(f.remoteCredits), f.remoteCredits},
		{"remote-timeout", int64(f.remoteTimeout), f.remoteTimeout},
	} {
		if k.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s %v: must be more than 0 (leave the flag out for its default)", k.name, k.show))
		}
	}
	if f.ledger == "" {
		errs = append(errs, errors.New(`--ledger "": name a directory (the ledger is kept on disk; it is created if missing)`))
	}
	if f.procs < 0 || f.procs > maxProcs {
		errs = append(errs, fmt.Errorf("--gomaxprocs %d: want 0 (the cores and one more) to %d", f.procs, maxProcs))
	}
	if !(f.remoteAudit >= 0 && f.remoteAudit <= 1) {
		errs = append(errs, fmt.Errorf("--remote-audit %v: want 0 to 1", f.remoteAudit))
	}
	if !f.sigverifyLocal && f.verifiers == "" && f.clusterSeeds == "" {
		errs = append(errs, errors.New("--sigverify-local=false needs --verifiers or --cluster-seeds: nothing would check the signatures"))
	}
	if f.dedupBits == 0 {
		errs = append(errs, errors.New("--dedup-bits 0: must be more than 0 (leave the flag out for its default)"))
	}
	return errors.Join(errs...)
}

// rpcConfig returns the JSON-RPC server's config of the flags (the node
// fills in what comes from the graph), or nil with no --rpc-addr.
func rpcConfig(f runFlags) *rpc.Config {
	if f.rpcAddr == "" {
		return nil
	}
	return &rpc.Config{
		Addr: f.rpcAddr, Seed: f.seed, NoFaucet: httpguard.Public(f.rpcAddr) && !f.rpcFaucet, MaxConns: f.rpcMaxConns, MaxConnsPerIP: f.rpcMaxConnsPerIP, ExpensivePerSec: f.rpcExpensivePerSec, HistorySlots: f.rpcHistorySlots,
		MaxBlockTransactions: f.rpcMaxBlockTransactions,
		AirdropWindow:        f.rpcAirdropWindow, AirdropPerRecipient: f.rpcAirdropPerRecipient,
		AirdropLamports: f.rpcAirdropLamports, AirdropRequests: f.rpcAirdropRequests,
	}
}

// keyCacheUsage is the help text of --sigverify-key-cache (run and
// verifier).
const keyCacheUsage = "public keys the lanes backend keeps decompressed (about 170 bytes each, four-way sets chosen by a seeded hash), so that a key seen again skips its decompression (about 5% of an ifma8 check, net); on ifma8, up to a quarter of them (at most 16,384) also get a comb of their own tables (4.6 KB each) once seen again, which takes about a third off their checks; the verdicts are the same (0: none)"

// newBackend is the --sigverify-backend named, with a key cache of
// --sigverify-key-cache keys where it takes one (sigverify.WithKeyCache).
func newBackend(name string, keyCache int) (sigverify.Backend, error) {
	if keyCache < 0 || keyCache > sigverify.MaxKeyCache {
		return nil, fmt.Errorf("--sigverify-key-cache %d: must be 0 (none) to %d", keyCache, sigverify.MaxKeyCache)
	}
	b, err := sigverify.NewBackend(name)
	if err != nil {
		return nil, err
	}
	return sigverify.WithKeyCache(b, keyCache), nil
}
