package bankingbench

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace/cpustage"
	"github.com/tpugo/tpu/trace/procstats"
	"github.com/tpugo/tpu/txview"
)

// Config configures Run, after Agave's banking-bench.
type Config struct {
	Iterations          int // iterations; each sends BatchesPerIteration batches and waits until all are processed
	BatchesPerIteration int
	NumChunks           int // distinct sets of batches, used round robin
	PacketsPerBatch     int
	Contention          loadgen.Contention
	Scheduler           scheduler.Config
	// CostLimits keeps Agave's block and per-account limits; banking-bench
	// lifts them (bank.set_limits(u64::MAX, ...)) and so does Run
	// unless this is set.
	CostLimits bool
	// SlotTime ends a slot (commit and a new blockhash) this often. Zero
	// means 400 ms.
	SlotTime time.Duration
	// Ledger is the ledger directory, which must not hold a ledger yet;
	// empty means a temporary directory, removed afterwards.
	Ledger string
	Sync   ledger.SyncMode
	// NoTxHistory keeps no transaction history (bank.Config.NoTxHistory).
	NoTxHistory bool
	// KeepStatuses clears the status cache only when the chunks come
	// round again (every NumChunks iterations) rather than every
	// iteration as banking-bench does, so that it grows to NumChunks
	// iterations' transactions under the bench's one blockhash, as a
	// load signed over one blockhash fills it.
	KeepStatuses bool
	// Progress, when not nil, is called about once a second.
	Progress func(done, total int, elapsed time.Duration)
	// StageCPU measures the CPU by stage over the iterations, as tpu run
	// does (trace/cpustage): Result.StageCPU. It runs Go's CPU profiler,
	// of which a process has one at a time: with another one running
	// Run does not measure (StageCPU stays nil) and says nothing.
	StageCPU bool
	// CPUProfile, when not nil, receives that profile (pprof's gzipped
	// format) after the run; it implies StageCPU.
	CPUProfile io.Writer
}

// Result is what Run measured. The first fields are
// banking-bench's own.
type Result struct {
	TotalSent    uint64 `json:"total_sent"`
	BaseTxCount  uint64 `json:"base_tx_count"`
	TxsProcessed uint64 `json:"txs_processed"`
	TxsLanded    uint64 `json:"txs_landed"`
	TotalUs      uint64 `json:"total_us"`
	TxTotalUs    uint64 `json:"tx_total_us"`
	// banking_bench_total, _tx_total and _success_tx_total: transactions
	// per second over total_us and tx_total_us.
	BankingBenchTotal        float64 `json:"banking_bench_total"`
	BankingBenchTxTotal      float64 `json:"banking_bench_tx_total"`
	BankingBenchSuccessTotal float64 `json:"banking_bench_success_tx_total"`
	// MedianTPS is the median over iterations of transactions processed
	// per second; P10TPS and P90TPS the 10th and 90th percentiles.
	MedianTPS float64 `json:"median_tps"`
	P10TPS    float64 `json:"p10_tps"`
	P90TPS    float64 `json:"p90_tps"`

	Method       string            `json:"block_production_method"`
	Handoff      string            `json:"handoff"`
	Contention   string            `json:"write_lock_contention"`
	KeepStatuses bool              `json:"keep_statuses"` // Config.KeepStatuses
	Workers      int               `json:"num_workers"`
	Slots        uint64            `json:"slots"`
	AllocsPerTx  float64           `json:"allocs_per_tx"`
	BytesPerTx   float64           `json:"bytes_allocated_per_tx"`
	GCCPUPercent float64           `json:"gc_cpu_percent"`
	Outcomes     map[string]uint64 `json:"outcomes"`
	AccountingOK bool              `json:"accounting_ok"`
	// StatusEntries is how many signatures the status cache held after
	// the last iteration.
	StatusEntries int `json:"status_entries"`
	// StageCPU is the CPU by stage over the iterations (Config.StageCPU),
	// with the stages as tpu run names them: banking is the goroutine
	// that drives the scheduler (admission, scheduling, booking, slot
	// ends), execution the workers, commit the ledger's goroutines,
	// generator the harness's own work (filling the batches, clearing
	// the status cache between iterations). Nil when not measured.
	StageCPU *StageCPU `json:"stage_cpu,omitempty"`
}

// StageCPU is the CPU by stage of a run (trace/cpustage).
type StageCPU struct {
	ProcessCPUS float64 `json:"process_cpu_s"` // the process's CPU over the iterations (getrusage)
	// Coverage is the share of ProcessCPUS the profile sampled; the
	// stages are scaled to add up to ProcessCPUS.
	Coverage float64 `json:"coverage"`
	// ResolutionUSPerTx is one sample's CPU per transaction sent.
	ResolutionUSPerTx float64                `json:"resolution_us_per_tx"`
	Stages            map[string]StageFigure `json:"stages"`
}

// StageFigure is one stage's CPU.
type StageFigure struct {
	USPerTx float64 `json:"us_per_tx"` // per transaction sent
	Share   float64 `json:"share"`     // of the process's CPU
	Samples int64   `json:"samples"`   // the profile samples the figure rests on
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("bankingbench: invalid config")

// Run generates banking-bench's transactions (a 1-lamport transfer
// to an account funded at genesis, with a unit price and a unit limit
// instruction: 267 bytes, random signature bytes), hands them straight to
// a Scheduler in packet batches, and measures. Banking does not check
// signatures, so, as in the original, none is computed.
func Run(cfg Config) (Result, error) {
	if cfg.Iterations <= 0 || cfg.BatchesPerIteration <= 0 || cfg.NumChunks <= 0 || cfg.PacketsPerBatch <= 0 || cfg.PacketsPerBatch > packet.MaxBatchCap {
		return Result{}, fmt.Errorf("%w: iterations, batches, chunks and packets per batch (at most %d) must be positive", ErrConfig, packet.MaxBatchCap)
	}
	if cfg.SlotTime == 0 {
		cfg.SlotTime = 400 * time.Millisecond
	}
	perIter := cfg.BatchesPerIteration * cfg.PacketsPerBatch
	// Accounts: a payer per transaction of an iteration, and the
	// recipients the contention mode needs; all funded at genesis.
	recipients := perIter
	switch cfg.Contention {
	case loadgen.ContentionSameBatchOnly:
		recipients = cfg.BatchesPerIteration
	case loadgen.ContentionFull:
		recipients = 1
	}
	genesis := bank.GenesisConfig{Seed: "tpu-bench", Accounts: perIter + recipients}
	dir := cfg.Ledger
	if dir == "" {
		tmp, err := os.MkdirTemp("", "tpu-bench-ledger-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	bankCfg := bank.Config{Dir: dir, Sync: cfg.Sync, Genesis: genesis, NoTxHistory: cfg.NoTxHistory}
	if !cfg.CostLimits {
		bankCfg.BlockCostLimit, bankCfg.AccountCostLimit = ^uint64(0)/2, ^uint64(0)/2
	}
	var bk *bank.Bank
	var err error
	// The ledger's goroutines, started by Open, are commit's.
	cpustage.Do(cpustage.Commit, func() { bk, err = bank.Open(bankCfg) })
	if err != nil {
		return Result{}, err
	}
	defer bk.Close()
	onWorker := cfg.Scheduler.OnWorker
	cfg.Scheduler.OnWorker = func() {
		cpustage.Set(cpustage.Execution)
		if onWorker != nil {
			onWorker()
		}
	}
	sched, err := scheduler.New(cfg.Scheduler, bk)
	if err != nil {
		return Result{}, err
	}
	defer sched.Close()
	scfg := sched.Config()
	drv := scheduler.NewDriver(sched, scheduler.DriverConfig{})

	keys := make([]banking.Pubkey, genesis.Accounts)
	for i := range keys {
		keys[i] = txview.PublicKey(bank.GenesisKey(genesis.Seed, i))
	}
	chunks := make([][][]byte, cfg.NumChunks) // chunk -> transaction bytes
	bh := bk.LatestBlockhash()
	for c := range chunks {
		for i := 0; i < perIter; i++ {
			to := keys[perIter+i%recipients]
			if cfg.Contention == loadgen.ContentionSameBatchOnly {
				to = keys[perIter+i/cfg.PacketsPerBatch]
			}
			m := txview.Message{Payer: keys[i], Blockhash: bh, Instructions: []txview.Ix{
				txview.Transfer(keys[i], to, 1),
				txview.SetComputeUnitPrice(1),
				txview.SetComputeUnitLimit(1470),
			}}
			msg, err := m.Compile()
			if err != nil {
				return Result{}, err
			}
			tx := append([]byte{1}, make([]byte, txview.SignatureSize)...)
			sig, _ := txview.FirstSignature(tx) // Sign made one
			rand.Read(sig[:])                   // random signature: unique per transaction and chunk
			chunks[c] = append(chunks[c], append(tx, msg...))
		}
	}
	pool, err := packet.NewPool(packet.Config{BatchCap: cfg.PacketsPerBatch, MaxIdle: 4 * cfg.BatchesPerIteration})
	if err != nil {
		return Result{}, err
	}

	res := Result{Method: scfg.Method.String(), Handoff: scfg.Handoff.String(), Contention: cfg.Contention.String(), KeepStatuses: cfg.KeepStatuses, Workers: scfg.Workers}
	var processingUs []float64 // transactions per second, per iteration
	var busy time.Duration
	batches := make([]*packet.Batch, cfg.BatchesPerIteration)
	runtime.GC()
	var sampler *cpustage.Sampler
	if cfg.StageCPU || cfg.CPUProfile != nil {
		sampler, _ = cpustage.Start(cfg.CPUProfile != nil) // nil: another profile runs
	}
	before := procstats.Read()

	start := time.Now()
	slotStart := start
	lastProgress := start
	var loopErr error
	// This goroutine is banking's (the scheduler's), but while it plays
	// the network and resets for the next iteration: the generator's.
	cpustage.Do(cpustage.Banking, func() {
		for it := 0; it < cfg.Iterations; it++ {
			chunk := chunks[it%cfg.NumChunks]
			cpustage.Set(cpustage.Generator)
			for b := range batches { // what the network would have delivered
				batches[b] = pool.Get()
				for _, tx := range chunk[b*cfg.PacketsPerBatch : (b+1)*cfg.PacketsPerBatch] {
					batches[b].Next().Fill(tx)
				}
			}
			// The same transactions come again: as banking-bench's
			// clear_signatures, or, keeping statuses, when they do.
			if !cfg.KeepStatuses || it%cfg.NumChunks == 0 {
				sched.ClearStatusCache()
			}
			cpustage.Set(cpustage.Banking)
			t0 := time.Now()
			// Batches arrive one by one, and the scheduler hands out work
			// between them, as Agave's scheduler thread interleaves receiving
			// with scheduling: the workers start on the first batch.
			for _, b := range batches {
				drv.OnBatch(b)
				drv.Poll()
			}
			for !drv.Idle() {
				drv.Await()
				// The slot clock, read between completions. (With nothing
				// in flight and work buffered, the work waits for the next
				// slot's cost room: --cost-limits.)
				if !sched.Ending() && time.Since(slotStart) >= cfg.SlotTime {
					slotStart = time.Now()
					drv.OnTick()
				}
			}
			if loopErr = drv.Err(); loopErr != nil {
				return
			}
			d := time.Since(t0)
			busy += d
			processingUs = append(processingUs, float64(perIter)/d.Seconds())
			if cfg.Progress != nil && time.Since(lastProgress) >= time.Second {
				lastProgress = time.Now()
				cfg.Progress(it+1, cfg.Iterations, time.Since(start))
			}
		}
	})
	var win cpustage.Window
	if sampler != nil {
		win, _ = sampler.Stop()
	}
	if loopErr != nil {
		return res, loopErr
	}
	total := time.Since(start)
	spent := procstats.Read().Sub(before)

	st := sched.Stats()
	res.TotalSent = uint64(cfg.Iterations * perIter)
	res.TxsProcessed = st.Outcomes[packet.OutcomeExecutedOK] + st.Outcomes[packet.OutcomeExecutedFailed]
	res.TxsLanded = st.Outcomes[packet.OutcomeExecutedOK]
	res.TotalUs = uint64(total.Microseconds())
	res.TxTotalUs = uint64(busy.Microseconds())
	res.BankingBenchTotal = float64(res.TotalSent) / total.Seconds()
	res.BankingBenchTxTotal = float64(res.TotalSent) / busy.Seconds()
	res.BankingBenchSuccessTotal = float64(res.TxsLanded) / total.Seconds()
	slices.Sort(processingUs)
	res.MedianTPS = processingUs[len(processingUs)/2]
	res.P10TPS = processingUs[len(processingUs)/10]
	res.P90TPS = processingUs[len(processingUs)*9/10]
	res.Slots = st.Slots
	res.StatusEntries = bk.StatusEntries()
	res.AllocsPerTx, res.BytesPerTx = spent.PerOp(res.TotalSent)
	res.GCCPUPercent = spent.GCPercent()
	res.Outcomes = map[string]uint64{}
	var sum uint64
	for o, c := range st.Outcomes {
		sum += c
		if o != 0 {
			res.Outcomes[packet.Outcome(o).String()] = c
		}
	}
	res.AccountingOK = st.Received == sum+st.Buffered && st.Received == res.TotalSent
	if sampler != nil {
		res.StageCPU = stageCPU(win, res.TotalSent)
		if cfg.CPUProfile != nil {
			if err := sampler.WriteProfile(cfg.CPUProfile); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// stageCPU turns the iterations' profile window into the figures per
// transaction of n.
func stageCPU(w cpustage.Window, n uint64) *StageCPU {
	s := &StageCPU{ProcessCPUS: w.Process.Seconds(), Coverage: w.Coverage(), Stages: map[string]StageFigure{}}
	if n == 0 {
		return s
	}
	s.ResolutionUSPerTx = float64(w.Resolution()) / 1e3 / float64(n)
	for st := range cpustage.NumStages {
		fig := StageFigure{USPerTx: float64(w.Stages[st]) / 1e3 / float64(n), Samples: w.Samples[st]}
		if w.Process > 0 {
			fig.Share = float64(w.Stages[st]) / float64(w.Process)
		}
		s.Stages[st.String()] = fig
	}
	return s
}
