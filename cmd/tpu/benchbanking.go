package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/banking/bankingbench"
	"github.com/tpugo/tpu/trace/cpustage"
)

func init() {
	register(command{
		name:    "bench banking",
		summary: "measure the banking stage alone, as Agave's banking-bench does",
		run:     runBenchBanking,
	})
}

const benchBankingHelp = `Usage: tpu bench banking [flags]

Generates 1-lamport transfers with a unit price and a unit limit (267
bytes, random signature bytes: banking does not check signatures, as in
Agave's banking-bench), hands them to the banking scheduler in packet
batches, and measures. Each iteration sends --batches-per-iteration batches
of --packets-per-batch transactions from one of --num-chunks prepared sets,
one at a time with scheduling in between (as Agave's scheduler thread
interleaves receiving with scheduling), and waits until all are
processed; the status cache is cleared between iterations so the sets can
be replayed (--keep-statuses: only when the sets come round again, so
that it grows under the bench's one blockhash), and cost limits are
lifted, both as the original does. Slots
still end every 400 ms and commit to the ledger (a temporary directory
unless --ledger is given).

Prints banking-bench's totals line and tx/s figures, and the CPU by stage
per transaction over the iterations, measured as tpu run measures it
(banking: the goroutine driving the scheduler; execution: the workers;
commit: the ledger; generator: filling the batches), or with --json one
object with the same fields.

Flags:`

func runBenchBanking(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu bench banking", benchBankingHelp)
	iterations := fs.Int("iterations", 1000, "iterations")
	batches := fs.Int("batches-per-iteration", 32, "packet batches sent per iteration")
	chunks := fs.Int("num-chunks", 8, "distinct prepared sets of batches, used round robin")
	packets := fs.Int("packets-per-batch", 128, "transactions per packet batch (at most 1024)")
	contention := fs.String("write-lock-contention", "none", "none, same-batch-only or full")
	method := fs.String("block-production-method", "greedy", "greedy, prio-graph or unbatched")
	workers := fs.Int("num-workers", 2, "banking workers")
	handoff := fs.String("handoff", "refcount", "refcount (buffered transactions keep their batch) or copy")
	costLimits := fs.Bool("cost-limits", false, "keep the block and per-account cost limits (banking-bench lifts them)")
	ledgerDir := fs.String("ledger", "", "ledger directory, new (default: a temporary directory, removed afterwards)")
	syncMode := fs.String("sync", "sync", "ledger commit mode: sync or nosync")
	keepStatuses := fs.Bool("keep-statuses", false, "clear the status cache only every --num-chunks iterations, when the sets come round again, not every iteration as banking-bench does: it then holds up to --num-chunks iterations' transactions under the bench's one blockhash, as a load signed over one blockhash fills it")
	txHistory := fs.Bool("tx-history", false, "keep each committed transaction and its meta in the ledger, as tpu run --no-gen does (off by default, as in tpu run with its load generator: the figures are banking's)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	cpuProfile := fs.String("cpuprofile", "", "write the CPU profile of the iterations (the one the CPU by stage is measured with) to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the run (generation included) to this file")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "tpu bench banking: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg := bankingbench.Config{
		Iterations:          *iterations,
		BatchesPerIteration: *batches,
		NumChunks:           *chunks,
		PacketsPerBatch:     *packets,
		CostLimits:          *costLimits,
		Ledger:              *ledgerDir,
		NoTxHistory:         !*txHistory,
		KeepStatuses:        *keepStatuses,
		StageCPU:            true,
	}
	var err error
	if cfg.Contention, err = loadgen.ParseContention(*contention); err == nil {
		if cfg.Scheduler.Method, err = scheduler.ParseMethod(*method); err == nil {
			if cfg.Scheduler.Handoff, err = scheduler.ParseHandoff(*handoff); err == nil {
				cfg.Sync, err = ledger.ParseSyncMode(*syncMode)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu bench banking: %v\n", err)
		return 2
	}
	cfg.Scheduler.Workers = *workers
	if err := cfg.Scheduler.Validate(); err != nil {
		fmt.Fprintf(env.stderr, "tpu bench banking: %v\n", err)
		return 2
	}
	if !*asJSON {
		cfg.Progress = func(done, total int, elapsed time.Duration) {
			fmt.Fprintf(env.stderr, "[iteration %d of %d, %.1fs]\n", done, total, elapsed.Seconds())
		}
	}
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(env.stderr, "tpu bench banking: --cpuprofile: %v\n", err)
			return 1
		}
		defer pf.Close()
		cfg.CPUProfile = pf
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			pf, err := os.Create(*memProfile)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(pf, 0)
				pf.Close()
			}
			if err != nil {
				fmt.Fprintf(env.stderr, "tpu bench banking: --memprofile: %v\n", err)
			}
		}()
	}
	res, err := bankingbench.Run(cfg)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu bench banking: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(env.stdout, string(b))
	} else {
		fmt.Fprintf(env.stdout, "[total_sent: %d, base_tx_count: %d, txs_processed: %d, txs_landed: %d, total_us: %d, tx_total_us: %d]\n",
			res.TotalSent, res.BaseTxCount, res.TxsProcessed, res.TxsLanded, res.TotalUs, res.TxTotalUs)
		fmt.Fprintf(env.stdout, "{'name': 'banking_bench_total', 'median': '%.2f'}\n", res.BankingBenchTotal)
		fmt.Fprintf(env.stdout, "{'name': 'banking_bench_tx_total', 'median': '%.2f'}\n", res.BankingBenchTxTotal)
		fmt.Fprintf(env.stdout, "{'name': 'banking_bench_success_tx_total', 'median': '%.2f'}\n", res.BankingBenchSuccessTotal)
		statuses := ""
		if res.KeepStatuses {
			statuses = fmt.Sprintf(", statuses kept %d iterations", *chunks)
		}
		fmt.Fprintf(env.stdout, "method %s, handoff %s, contention %s%s, %d workers: tx/s per iteration median %.0f (p10 %.0f, p90 %.0f) over %d iterations, %d slots; %.2f allocs and %.0f bytes per tx, GC %.1f%% of CPU\n",
			res.Method, res.Handoff, res.Contention, statuses, res.Workers, res.MedianTPS, res.P10TPS, res.P90TPS, *iterations, res.Slots, res.AllocsPerTx, res.BytesPerTx, res.GCCPUPercent)
		printBenchStageCPU(env.stdout, res.StageCPU)
	}
	if !res.AccountingOK {
		fmt.Fprintf(env.stderr, "tpu bench banking: accounting failed: %v\n", res.Outcomes)
		return 1
	}
	if res.TxsLanded != res.TotalSent {
		fmt.Fprintf(env.stderr, "tpu bench banking: %d of %d transactions landed: %v\n", res.TxsLanded, res.TotalSent, res.Outcomes)
		return 1
	}
	return 0
}

// printBenchStageCPU prints the CPU by stage, as tpu run's summary
// does, on one line; nothing when it was not measured.
func printBenchStageCPU(w io.Writer, s *bankingbench.StageCPU) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "CPU by stage, us per transaction (the profile sampled %.0f%% of the process's %.1f s, scaled to it):", 100*s.Coverage, s.ProcessCPUS)
	for st := range cpustage.NumStages {
		if st == cpustage.Fetch || st == cpustage.Sigverify || st == cpustage.RPC {
			continue // none in this harness
		}
		fig := s.Stages[st.String()]
		if fig.Samples == 0 {
			fmt.Fprintf(w, " %s <%.2g", st, s.ResolutionUSPerTx)
		} else {
			fmt.Fprintf(w, " %s %.2f", st, fig.USPerTx)
		}
	}
	fmt.Fprintln(w)
}
