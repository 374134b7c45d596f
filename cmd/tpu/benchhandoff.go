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
	"slices"
	"strconv"
	"strings"
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
	"github.com/tpugo/tpu/txview"
)

func init() {
	register(command{
		name:    "bench handoff",
		summary: "compare the refcount and copy handoffs in CPU and throughput, by packet size and consumers of each verified batch",
		run:     runBenchHandoff,
	})
}

const benchHandoffHelp = `Usage: tpu bench handoff [flags]

Runs tpu run's pipeline in this process with --handoff refcount and with
--handoff copy, on identical load, at each of --sizes and --consumers
(consumers of each verified batch): 1 is banking alone; 2 adds the
banking trace's recorder (to a temporary directory; banking hands it
each batch as its driver takes it, copied there in copy mode, so that
copy is in the process's CPU but not the fan-out step's); 3 adds the
forwarder, sending every verified packet (no rate limit) to a UDP socket
on 127.0.0.1 that the bench reads and counts; 4 and more add taps, each a
goroutine that reads every packet's bytes (a byte per 64) and releases
the batch (a queue of 64 batches; a batch that finds it full is dropped,
counted). The load is signed once per size (--count transfers between
genesis accounts, all valid; "transfer" is a transfer as tpu run sends
it, a number pads each transfer with a memo to that many bytes, 1232 the
most a packet holds: they still verify and execute) and sent closed-loop
in every run (--rate 0, the default: as fast as the pipeline accepts,
its saturation throughput, without latency figures) or open-loop at
--rate. The block cost limit is lifted (to 10^12 units) so that the
cost model caps no run: a 1232-byte transfer costs ~5,000 units, which
would cap a default block at ~30k tx/s. Each run has a fresh ledger in a
temporary directory with one genesis, so every run offers the same
packets and none is a duplicate of an earlier run's. A warm-up
run, not counted, goes first. Rounds are interleaved: each round runs
every size and consumer count in both modes (which mode goes first
alternates), so that drift of the machine falls on both.

For each run it measures, over the time from the first send to the end
of the drain: executed transactions and tx/s (to the last execution);
heap allocations and bytes allocated per packet received and GC's share
of the CPU (runtime/metrics, whose CPU figures move at each collection:
a run too small to collect shows 0; each run starts after a forced
one); the heap's live objects, sampled every
10 ms (peak and mean, measured); the process's CPU per packet (getrusage)
and the fan-out step's alone (the time sigverify's actor spends handing
each batch to its consumers, the copies included), with its share of
the process's CPU, and that step's CPU from the hand-offs its thread's
clock timed alone, scaled to all (no wait for a core counted, unlike a
hand-off whose goroutine changed threads, timed by the wall clock); and the latency from each transaction's
scheduled send to its execution (p50, p99). It prints a table per
consumer count with the median of the rounds for each mode, the
copy/refcount ratio and the spread (min-max) across rounds, after a
table of CPU per packet for every size and consumer count with what the
copies cost (the fan-out's CPU in copy mode less refcount's, as a share
of the process's CPU); --json prints one JSON object per mode, size,
consumer count and round instead; --html FILE draws the medians against
the consumer count, a line per mode and size.

Flags:`

// handoffBlockCostLimit is the bench's block cost limit: high enough
// that no run's throughput is the cost model's.
const handoffBlockCostLimit = 1e12

// handoffModes are the handoffs compared, in the order of a round's
// first run.
var handoffModes = [2]scheduler.Handoff{scheduler.HandoffRefcount, scheduler.HandoffCopy}

// maxHandoffConsumers bounds --consumers: banking, the recorder, the
// forwarder and up to 13 taps.
const maxHandoffConsumers = 16

// handoffConsumers names the consumers of a verified batch by count.
func handoffConsumers(n int) string {
	switch {
	case n <= 1:
		return "banking"
	case n == 2:
		return "banking + recorder"
	case n == 3:
		return "banking + recorder + forwarder"
	case n == 4:
		return "banking + recorder + forwarder + 1 tap"
	}
	return fmt.Sprintf("banking + recorder + forwarder + %d taps", n-3)
}

// handoffFlags are tpu bench handoff's settings.
type handoffFlags struct {
	count, rounds, accounts, workers, sendBatch int
	rate                                        float64
	seed, syncMode, method                      string
	asJSON                                      bool
	htmlPath                                    string
	sizes, consumers                            string
	// From sizes and consumers, by validate: a size of 0 is a transfer
	// as it is.
	sizeList, consumerList []int
}

// handoffResult is one run: a mode, a consumer count, a round. The JSON
// field names are an interface: scripts read them.
type handoffResult struct {
	Mode      string `json:"mode"` // "refcount" or "copy"
	Consumers int    `json:"consumers"`
	// Size is the bytes of each transaction offered (their mean), Padded
	// whether a memo made them that size.
	Size     int    `json:"tx_bytes"`
	Padded   bool   `json:"padded"`
	Round    int    `json:"round"` // from 1
	Offered  int    `json:"offered"`
	Received uint64 `json:"received"` // datagrams fetch read
	Executed uint64 `json:"executed"`
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
	// FanoutCPUPerPacket is the fan-out's CPU per packet from the steps
	// the thread's clock timed alone, scaled to all
	// (stages.Snapshot.FanoutCPU: no wait for a core counted), and
	// FanoutClocked the share of steps so timed, 0 to 1.
	FanoutCPUPerPacket float64 `json:"fanout_cpu_per_packet_us"`
	FanoutClocked      float64 `json:"fanout_clocked"`
	// Copies is the batches the fan-out copied (copy mode).
	Copies uint64 `json:"copies"`
	// Recorded and RecorderDropped are the recorder's batches (2 and 3
	// consumers); Forwarded the forwarder's packets sent and SinkReceived
	// what the bench's socket read of them (3 consumers).
	Recorded        uint64 `json:"recorded_batches,omitempty"`
	RecorderDropped uint64 `json:"recorder_dropped,omitempty"`
	Forwarded       uint64 `json:"forwarded,omitempty"`
	SinkReceived    uint64 `json:"sink_received,omitempty"`
	// TapPackets is what the taps read (4 consumers and more), all taps
	// together; TapDropped the batches they dropped, their queue full.
	TapPackets uint64 `json:"tap_packets,omitempty"`
	TapDropped uint64 `json:"tap_dropped_batches,omitempty"`
}

func runBenchHandoff(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu bench handoff", benchHandoffHelp)
	var f handoffFlags
	fs.IntVar(&f.count, "count", 30_000, "transactions each run offers")
	fs.Float64Var(&f.rate, "rate", 0, "transactions per second, open-loop (0: closed-loop, as fast as the pipeline accepts: saturation throughput, no latency figures)")
	fs.IntVar(&f.rounds, "rounds", 3, "rounds; each runs every size and consumer count in both modes")
	fs.StringVar(&f.sizes, "sizes", "transfer,1232", "transaction sizes, comma-separated: transfer (as tpu run sends it), or bytes to pad each transfer to with a memo (at most 1232)")
	fs.StringVar(&f.consumers, "consumers", "1,2,3,4,8", fmt.Sprintf("consumers of each verified batch, comma-separated, 1 to %d (see above)", maxHandoffConsumers))
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

// validate checks the flags, and parses the lists; nargs is the
// arguments left after them.
func (f *handoffFlags) validate(nargs int) error {
	var errs []error
	var err error
	if f.sizeList, err = parseList(f.sizes, "--sizes", func(s string) (int, error) {
		if s == "transfer" {
			return 0, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > txview.PacketSize {
			return 0, fmt.Errorf("%q: transfer or a size in bytes up to %d", s, txview.PacketSize)
		}
		return n, nil
	}); err != nil {
		errs = append(errs, err)
	}
	if f.consumerList, err = parseList(f.consumers, "--consumers", func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxHandoffConsumers {
			return 0, fmt.Errorf("%q: 1 to %d", s, maxHandoffConsumers)
		}
		return n, nil
	}); err != nil {
		errs = append(errs, err)
	}
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

// parseList parses a comma-separated list of distinct values, in order.
func parseList(s, flag string, parse func(string) (int, error)) ([]int, error) {
	var out []int
	for _, v := range strings.Split(s, ",") {
		n, err := parse(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("%s: %q given twice", flag, v)
		}
		out = append(out, n)
	}
	return out, nil
}

// handoffLoad is one size's load, signed once for every run.
type handoffLoad struct {
	size   int // the bytes of each transaction, their mean
	padded bool
	load   *loadgen.Load
	idx    *loadgen.Index
}

// benchHandoff signs the loads once and runs every round.
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
	var loads []handoffLoad
	for _, size := range f.sizeList {
		fmt.Fprintf(env.stderr, "signing %d transactions (%s)...\n", f.count, map[bool]string{true: fmt.Sprintf("%d bytes", size), false: "transfers"}[size > 0])
		load, err := loadgen.Build(loadgen.Config{Seed: f.seed, Accounts: f.accounts, Blockhash: bh, Count: f.count,
			BatchSize: f.sendBatch, RandSeed: 1, Size: size})
		if err != nil {
			return nil, err
		}
		bytes := 0
		for _, tx := range load.Txs {
			bytes += len(tx)
		}
		loads = append(loads, handoffLoad{size: bytes / len(load.Txs), padded: size > 0, load: load, idx: load.Index()})
	}
	// The default backend, as tpu run's: looked up once for every run.
	backend, err := sigverify.NewBackend(sigverify.DefaultBackend)
	if err != nil {
		return nil, err
	}
	runs := f.rounds * 2 * len(loads) * len(f.consumerList)
	// A warm-up run, not counted: the first run of a process grows the
	// heap and the pool that every later one finds grown.
	fmt.Fprintf(env.stderr, "warm-up run...\n")
	wd := filepath.Join(dir, "warm-up")
	_, err = handoffRun(f, genesis, backend, loads[0], handoffModes[0], f.consumerList[0], wd)
	os.RemoveAll(wd)
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	var out []handoffResult
	for round := 1; round <= f.rounds; round++ {
		for li, l := range loads {
			for ci, consumers := range f.consumerList {
				modes := handoffModes
				if (round+li+ci)%2 == 0 {
					modes[0], modes[1] = modes[1], modes[0]
				}
				for _, mode := range modes {
					fmt.Fprintf(env.stderr, "run %d of %d: round %d, %d-byte transactions, %s, consumers %d (%s)...\n",
						len(out)+1, runs, round, l.size, mode, consumers, handoffConsumers(consumers))
					rd := filepath.Join(dir, fmt.Sprintf("run-%d", len(out)+1))
					r, err := handoffRun(f, genesis, backend, l, mode, consumers, rd)
					os.RemoveAll(rd)
					if err != nil {
						return nil, fmt.Errorf("round %d, %d bytes, %s, %d consumers: %w", round, l.size, mode, consumers, err)
					}
					r.Round = round
					out = append(out, r)
				}
			}
		}
	}
	return out, nil
}

// handoffRun runs the pipeline once with mode and consumers, its ledger
// and trace under dir, and sends load at f.rate.
func handoffRun(f handoffFlags, genesis bank.GenesisConfig, backend sigverify.Backend, l handoffLoad,
	mode scheduler.Handoff, consumers int, dir string) (handoffResult, error) {
	load, idx := l.load, l.idx
	r := handoffResult{Mode: mode.String(), Consumers: consumers, Size: l.size, Padded: l.padded, Offered: len(load.Txs)}
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
	bc.Bank.BlockCostLimit = handoffBlockCostLimit
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
	var taps []*tapSink
	for range consumers - 3 {
		t := newTapSink()
		defer t.close() // on the early returns
		taps = append(taps, t)
		nc.Graph.Taps = append(nc.Graph.Taps, t.batch)
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
		r.FanoutCPUPerPacket = float64(snap.FanoutCPU().Nanoseconds()) / 1e3 / float64(snap.Received)
	}
	if snap.FanoutSteps > 0 {
		r.FanoutClocked = float64(snap.FanoutClocked) / float64(snap.FanoutSteps)
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
	for _, t := range taps {
		p, d := t.close()
		r.TapPackets, r.TapDropped = r.TapPackets+p, r.TapDropped+d
	}
	// The recorder holds its queue until it is closed (above), so the
	// pool is read now rather than in the snapshot Stop took.
	if live := g.Pool().Stats().Live; !snap.AccountingOK() || live != 0 {
		return r, fmt.Errorf("accounting: %d in transit, %d batches live after the drain", snap.InTransit, live)
	}
	return r, nil
}
