package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking/bankingtrace"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/cpustage"
	"github.com/tpugo/tpu/trace/procstats"
)

func init() {
	register(command{
		name:    "bench handoff",
		summary: "compare the refcount and copy handoffs with 1, 2 and 3 consumers of each verified batch, on identical load",
		run:     runBenchHandoff,
	})
}

const benchHandoffHelp = `Usage: tpu bench handoff [flags]

Runs tpu run's pipeline in this process with --handoff refcount and with
--handoff copy, on identical load, at 1, 2 and 3 consumers of each
verified batch: 1 is banking alone; 2 adds the banking trace's recorder
(to a temporary directory); 3 adds the forwarder, sending every verified
packet (no rate limit) to a UDP socket on 127.0.0.1 that the bench reads
and counts. The load is signed once (--count transfers between genesis
accounts, all valid) and sent open-loop at --rate in every run (--rate 0:
closed-loop, as fast as the pipeline accepts: saturation throughput,
without latency figures); each run
has a fresh ledger in a temporary directory with one genesis, so every
run offers the same packets and none is a duplicate of an earlier run's.
Rounds are interleaved: each round runs every consumer count in both
modes (which mode goes first alternates), so that drift of the machine
falls on both.

For each run it measures, over the time from the first send to the end
of the drain: executed transactions and tx/s (to the last execution);
heap allocations and bytes allocated per packet received and GC's share
of the CPU (runtime/metrics, whose CPU figures move at each collection:
a run too small to collect shows 0; each run starts after a forced
one); the heap's live objects, sampled every
10 ms (peak and mean, measured); the process's CPU per packet (getrusage)
and the fan-out step's alone (the time sigverify's actor spends handing
each batch to its consumers, the copies included), with its share of
the process's CPU; and the latency from each transaction's
scheduled send to its execution (p50, p99). It prints a table per
consumer count with the median of the rounds for each mode, the
copy/refcount ratio and the spread (min-max) across rounds; --json prints
one JSON object per mode, consumer count and round instead; --html FILE
draws the medians against the consumer count.

Flags:`

// handoffModes are the handoffs compared, in the order of a round's
// first run.
var handoffModes = [2]scheduler.Handoff{scheduler.HandoffRefcount, scheduler.HandoffCopy}

// handoffConsumers names the consumers of a verified batch by count.
var handoffConsumers = [...]string{1: "banking", 2: "banking + recorder", 3: "banking + recorder + forwarder"}

// handoffFlags are tpu bench handoff's settings.
type handoffFlags struct {
	count, rounds, accounts, workers, sendBatch int
	rate                                        float64
	seed, syncMode, method                      string
	asJSON                                      bool
	htmlPath                                    string
}

// handoffResult is one run: a mode, a consumer count, a round. The JSON
// field names are an interface: scripts read them.
type handoffResult struct {
	Mode      string `json:"mode"` // "refcount" or "copy"
	Consumers int    `json:"consumers"`
	Round     int    `json:"round"` // from 1
	Offered   int    `json:"offered"`
	Received  uint64 `json:"received"` // datagrams fetch read
	Executed  uint64 `json:"executed"`
	// SocketDropped is what the kernel dropped before fetch read it
	// (Linux; 0 elsewhere), Dropped the other packets not executed, by
	// outcome: executed < offered on a machine too busy for the rate.
	SocketDropped uint64            `json:"socket_dropped"`
	Dropped       map[string]uint64 `json:"dropped,omitempty"`
	// Seconds is from the schedule's start to the last execution; TPS
	// is Executed over it.
	Seconds float64 `json:"seconds"`
	TPS     float64 `json:"tps"`
	// Per packet received, from the first send to the end of the drain.
	AllocsPerPacket float64 `json:"allocs_per_packet"`
	BytesPerPacket  float64 `json:"bytes_per_packet"`
	// GCCPU is GC's share of the CPU over the same time, 0 to 1.
	GCCPU float64 `json:"gc_cpu"`
	// HeapPeak and HeapMean are the heap's live and not yet swept
	// objects (/memory/classes/heap/objects:bytes), sampled every 10 ms.
	HeapPeak uint64 `json:"heap_peak_bytes"`
	HeapMean uint64 `json:"heap_mean_bytes"`
	// P50 and P99 are the latency from each transaction's scheduled send
	// to its execution, in microseconds.
	P50 float64 `json:"p50_us"`
	P99 float64 `json:"p99_us"`
	// CPUPerPacket is the process's CPU (getrusage: user and system, all
	// threads) per packet received, in microseconds; FanoutPerPacket the
	// fan-out step's alone (stages.Snapshot.FanoutTime: sigverify handing
	// each batch to its consumers, the copies in copy mode), and
	// FanoutShare that step's share of the process's CPU, 0 to 1.
	CPUPerPacket    float64 `json:"cpu_per_packet_us"`
	FanoutPerPacket float64 `json:"fanout_per_packet_us"`
	FanoutShare     float64 `json:"fanout_share"`
	// Copies is the batches the fan-out copied (copy mode).
	Copies uint64 `json:"copies"`
	// Recorded and RecorderDropped are the recorder's batches (2 and 3
	// consumers); Forwarded the forwarder's packets sent and SinkReceived
	// what the bench's socket read of them (3 consumers).
	Recorded        uint64 `json:"recorded_batches,omitempty"`
	RecorderDropped uint64 `json:"recorder_dropped,omitempty"`
	Forwarded       uint64 `json:"forwarded,omitempty"`
	SinkReceived    uint64 `json:"sink_received,omitempty"`
}

func runBenchHandoff(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu bench handoff", benchHandoffHelp)
	var f handoffFlags
	fs.IntVar(&f.count, "count", 30_000, "transactions each run offers")
	fs.Float64Var(&f.rate, "rate", 10_000, "transactions per second, open-loop (0: closed-loop, as fast as the pipeline accepts: saturation throughput, no latency figures)")
	fs.IntVar(&f.rounds, "rounds", 3, "rounds; each runs every consumer count in both modes")
	fs.IntVar(&f.accounts, "accounts", 1000, "genesis accounts the load transfers between")
	fs.IntVar(&f.workers, "num-workers", 2, "banking workers")
	fs.IntVar(&f.sendBatch, "send-batch", 64, "datagrams per sendmmsg call of the load generator")
	fs.StringVar(&f.method, "block-production-method", "greedy", "greedy, prio-graph or unbatched")
	fs.StringVar(&f.syncMode, "sync", "nosync", "ledger commits: sync (fsync each slot) or nosync")
	fs.StringVar(&f.seed, "seed", "tpu", "genesis seed")
	fs.BoolVar(&f.asJSON, "json", false, "print a JSON array, one object per mode, consumer count and round, instead of the tables")
	fs.StringVar(&f.htmlPath, "html", "", "also write the figures against the consumer count to this HTML file (inline SVG)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := f.validate(fs.NArg()); err != nil {
		fmt.Fprintf(env.stderr, "tpu bench handoff: %v\n", err)
		return 2
	}
	res, err := benchHandoff(env, f)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu bench handoff: %v\n", err)
		return 1
	}
	if f.asJSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintf(env.stdout, "%s\n", b)
	} else {
		writeHandoffTables(env.stdout, res, f)
	}
	if f.htmlPath != "" {
		var b bytes.Buffer
		if err := writeHandoffHTML(&b, res, f); err != nil {
			fmt.Fprintf(env.stderr, "tpu bench handoff: --html: %v\n", err)
			return 1
		}
		if err := os.WriteFile(f.htmlPath, b.Bytes(), 0o644); err != nil {
			fmt.Fprintf(env.stderr, "tpu bench handoff: --html: %v\n", err)
			return 1
		}
	}
	return 0
}

// validate checks the flags; nargs is the arguments left after them.
func (f handoffFlags) validate(nargs int) error {
	var errs []error
	if nargs > 0 {
		errs = append(errs, errors.New("unexpected arguments"))
	}
	if f.count < 1 {
		errs = append(errs, fmt.Errorf("--count %d: must be at least 1", f.count))
	}
	if !(f.rate >= 0) { // NaN too
		errs = append(errs, fmt.Errorf("--rate %v: must not be negative (0: closed-loop)", f.rate))
	}
	if f.rounds < 1 {
		errs = append(errs, fmt.Errorf("--rounds %d: must be at least 1", f.rounds))
	}
	if f.accounts < 2 {
		errs = append(errs, fmt.Errorf("--accounts %d: must be at least 2", f.accounts))
	}
	if f.workers < 1 || f.sendBatch < 1 {
		errs = append(errs, errors.New("--num-workers and --send-batch must be at least 1"))
	}
	if _, err := scheduler.ParseMethod(f.method); err != nil {
		errs = append(errs, err)
	}
	if _, err := ledger.ParseSyncMode(f.syncMode); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// benchHandoff signs the load once and runs every round.
func benchHandoff(env *cliEnv, f handoffFlags) ([]handoffResult, error) {
	dir, err := os.MkdirTemp("", "tpu-bench-handoff-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// One genesis for every run, so that one signed load fits them all.
	genesis := bank.GenesisConfig{Seed: f.seed, Accounts: f.accounts, BlockhashSeed: "tpu-bench-handoff"}
	bank, err := bank.Open(bank.Config{Genesis: genesis}) // in memory: for the genesis blockhash
	if err != nil {
		return nil, err
	}
	bh := bank.LatestBlockhash()
	if err := bank.Close(); err != nil {
		return nil, err
	}
	fmt.Fprintf(env.stderr, "signing %d transactions...\n", f.count)
	load, err := loadgen.Build(loadgen.Config{Seed: f.seed, Accounts: f.accounts, Blockhash: bh, Count: f.count,
		BatchSize: f.sendBatch, RandSeed: 1})
	if err != nil {
		return nil, err
	}
	// The default backend, as tpu run's: looked up once for every run.
	backend, err := sigverify.NewBackend(sigverify.DefaultBackend)
	if err != nil {
		return nil, err
	}
	idx := load.Index()
	runs := f.rounds * 2 * (len(handoffConsumers) - 1)
	var out []handoffResult
	for round := 1; round <= f.rounds; round++ {
		for consumers := 1; consumers < len(handoffConsumers); consumers++ {
			modes := handoffModes
			if (round+consumers)%2 == 0 {
				modes[0], modes[1] = modes[1], modes[0]
			}
			for _, mode := range modes {
				fmt.Fprintf(env.stderr, "run %d of %d: round %d, %s, consumers %d (%s)...\n",
					len(out)+1, runs, round, mode, consumers, handoffConsumers[consumers])
				rd := filepath.Join(dir, fmt.Sprintf("run-%d", len(out)+1))
				r, err := handoffRun(f, genesis, backend, load, idx, mode, consumers, rd)
				os.RemoveAll(rd)
				if err != nil {
					return nil, fmt.Errorf("round %d, %s, %d consumers: %w", round, mode, consumers, err)
				}
				r.Round = round
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// handoffRun runs the pipeline once with mode and consumers, its ledger
// and trace under dir, and sends load at f.rate.
func handoffRun(f handoffFlags, genesis bank.GenesisConfig, backend sigverify.Backend, load *loadgen.Load, idx *loadgen.Index,
	mode scheduler.Handoff, consumers int, dir string) (handoffResult, error) {
	r := handoffResult{Mode: mode.String(), Consumers: consumers, Offered: len(load.Txs)}
	_, workers, restore := pipelineProcs(0) // as tpu run
	defer restore()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prov, err := trace.Setup(context.Background(), trace.Config{})
	if err != nil {
		return r, err
	}
	defer prov.Shutdown(context.Background())

	var cfg stages.Config
	cfg.Fetch.Addr = "127.0.0.1:0"
	cfg.Sigverify.Verify.Backend, cfg.Sigverify.Verify.Workers = backend, workers
	bc := &cfg.Banking
	bc.Bank = bank.Config{Dir: filepath.Join(dir, "ledger"), Genesis: genesis}
	bc.Bank.Sync, _ = ledger.ParseSyncMode(f.syncMode) // validated
	bc.Scheduler = scheduler.Config{Workers: f.workers, Handoff: mode}
	bc.Scheduler.Method, _ = scheduler.ParseMethod(f.method)
	var sched fromSchedule
	var last atomic.Int64 // the last execution, packet.Now()
	bc.OnExecuted = func(sig *[64]byte, done int64) {
		sched.executed(sig, done)
		if done > last.Load() {
			last.Store(done) // banking's goroutine alone calls it
		}
	}
	nc := nodeConfig{Graph: cfg, Trace: prov, Log: log}
	if consumers >= 2 {
		nc.OpenRecorder = func(banking *stages.BankingConfig) (*bankingtrace.Recorder, error) {
			return bankingtrace.NewRecorder(bankingtrace.Config{Dir: filepath.Join(dir, "trace"), Bank: banking.Bank,
				Scheduler: banking.Scheduler, Driven: true, Logger: log})
		}
	}
	var sink *udpSink
	if consumers >= 3 {
		if sink, err = newUDPSink(); err != nil {
			return r, err
		}
		defer sink.close()
		nc.Graph.Forward = stages.ForwardConfig{To: sink.addr, Rate: stages.MaxForwardRate}
	}
	n, err := startNode(nc)
	if err != nil {
		return r, err
	}
	defer n.Close() // on the early returns: before the sink closes
	g := n.graph

	runtime.GC() // every run starts from the same heap: the load and little else
	heap := startHeapSampler(10 * time.Millisecond)
	before, cpu0 := procstats.Read(), cpustage.ProcessCPU()
	start := time.Now()
	sc := loadgen.SendConfig{Target: g.Addr(), Rate: f.rate, Start: start, BatchSize: f.sendBatch}
	if f.rate > 0 {
		sched.arm(idx, loadgen.Schedule{Start: start, Rate: f.rate})
	} else {
		sc.Accepting = g.Accepting // closed-loop: no schedule, no latency
	}
	_, err = load.Send(sc)
	if err != nil {
		heap.stop()
		return r, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		heap.stop()
		return r, err
	}
	spent, cpu := procstats.Read().Sub(before), cpustage.ProcessCPU()-cpu0
	r.HeapPeak, r.HeapMean = heap.stop()

	snap, _ := g.Snapshot()
	r.Received, r.Executed, r.Copies, r.SocketDropped = snap.Received, snap.Executed(), snap.Copies, snap.SocketDropped
	for _, o := range packet.Terminal() {
		if c := snap.Outcomes[o]; c > 0 && o != packet.OutcomeExecutedOK && o != packet.OutcomeExecutedFailed {
			if r.Dropped == nil {
				r.Dropped = map[string]uint64{}
			}
			r.Dropped[o.String()] = c
		}
	}
	r.AllocsPerPacket, r.BytesPerPacket = spent.PerOp(snap.Received)
	if snap.Received > 0 {
		r.CPUPerPacket = float64(cpu.Nanoseconds()) / 1e3 / float64(snap.Received)
		r.FanoutPerPacket = float64(snap.FanoutTime.Nanoseconds()) / 1e3 / float64(snap.Received)
	}
	if cpu > 0 {
		r.FanoutShare = float64(snap.FanoutTime) / float64(cpu)
	}
	if spent.CPU > 0 {
		r.GCCPU = spent.GCCPU / spent.CPU
	}
	if l := last.Load(); l > 0 {
		r.Seconds = time.Duration(l - int64(start.Sub(packet.Time(0)))).Seconds()
	}
	if r.Seconds > 0 {
		r.TPS = float64(r.Executed) / r.Seconds
	}
	r.P50, r.P99 = usOf(sched.hist.Quantile(0.5)), usOf(sched.hist.Quantile(0.99))
	if snap.Forward != nil {
		r.Forwarded = snap.Forward.Forwarded
	}
	if n.rec != nil {
		if err := n.Close(); err != nil {
			return r, err
		}
		st := n.rec.Stats()
		r.Recorded, r.RecorderDropped = st.Batches, st.Dropped+st.Abandoned
	}
	if sink != nil {
		r.SinkReceived = sink.close()
	}
	// The recorder holds its queue until it is closed (above), so the
	// pool is read now rather than in the snapshot Stop took.
	if live := g.Pool().Stats().Live; !snap.AccountingOK() || live != 0 {
		return r, fmt.Errorf("accounting: %d in transit, %d batches live after the drain", snap.InTransit, live)
	}
	return r, nil
}
