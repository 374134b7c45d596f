package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func init() {
	register(command{
		name:    "bench latency",
		summary: "measure latency against offered load: the closed-loop ceiling, then open-loop runs at shares of it",
		run:     runBenchLatency,
	})
}

const benchLatencyHelp = `Usage: tpu bench latency [flags] [-- tpu run flags]

Measures latency against offered load with tpu run's pipeline and load
generator, in this process. It first runs closed-loop (as fast as the
pipeline accepts) for --duration: what it executes per second is the
ceiling. Then it runs open-loop at each --levels share of the ceiling,
each for --duration, on a fixed schedule, with latency measured from each
transaction's scheduled send to its execution. It prints a markdown table:
offered and achieved tx/s, p50, p90, p99, p99.9 and max of that latency
(for the ceiling row, closed-loop, from the socket), and how far the
sender fell behind its schedule; then the knobs' values. Flags after --
go to every tpu run (the latency knobs, --num-workers, --sync, ...);
--rate, --duration, --ledger, --reset, --no-gen and --summary-json are
this command's to set. Each run starts a fresh ledger in a temporary
directory.

Flags:`

// benchRunFlags are tpu run's flags tpu bench latency sets itself.
var benchRunFlags = []string{"rate", "duration", "ledger", "reset", "no-gen", "summary-json", "count"}

func runBenchLatency(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu bench latency", benchLatencyHelp)
	duration := fs.Duration("duration", 10*time.Second, "how long each run sends")
	levels := fs.String("levels", "10,25,50,75,90", "open-loop rates, in percent of the closed-loop ceiling, comma-separated, each above 0")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	pcts, err := parseLevels(*levels)
	if err == nil && *duration <= 0 {
		err = fmt.Errorf("--duration %v: must be more than 0", *duration)
	}
	runArgs := fs.Args()
	var knobs runFlags
	if err == nil {
		knobs, err = benchRunArgs(runArgs)
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu bench latency: %v\n", err)
		return 2
	}
	dir, err := os.MkdirTemp("", "tpu-bench-latency-")
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu bench latency: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)

	quiet := &cliEnv{stdin: env.stdin, stdout: io.Discard, stderr: io.Discard, getenv: env.getenv}
	one := func(name string, rate float64) (summary, error) {
		path := filepath.Join(dir, name+".json")
		a := append([]string{"--ledger", filepath.Join(dir, "ledger"), "--reset", "--duration", duration.String(),
			"--summary-json", path, "--rpc-addr", "", "--tpu-addr", "127.0.0.1:0", "--log-level", "error"}, runArgs...)
		if rate > 0 {
			a = append(a, "--rate", strconv.FormatFloat(rate, 'f', 0, 64))
		}
		rfs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
		rfs.SetOutput(io.Discard)
		f := defineRunFlags(rfs)
		if err := rfs.Parse(a); err != nil {
			return summary{}, err
		}
		f.rateSet = rate > 0
		code, err := runPipeline(quiet, *f)
		if code != 0 {
			return summary{}, fmt.Errorf("%s: tpu run exited %d: %v", name, code, err)
		}
		var s summary
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		return s, err
	}

	fmt.Fprintf(env.stderr, "closed-loop run for %v: the ceiling...\n", *duration)
	ceiling, err := one("ceiling", 0)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu bench latency: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.stderr, "ceiling %.0f tx/s\n", ceiling.TPS)
	if ceiling.TPS <= 0 {
		fmt.Fprintln(env.stderr, "tpu bench latency: the closed-loop run executed nothing")
		return 1
	}
	rows := []benchRow{{label: "closed-loop (ceiling)", s: ceiling, lat: ceiling.Latency}}
	for _, p := range pcts {
		rate := ceiling.TPS * p / 100
		fmt.Fprintf(env.stderr, "open-loop run at %.0f%% of the ceiling, %.0f tx/s, for %v...\n", p, rate, *duration)
		s, err := one(fmt.Sprintf("open-%g", p), rate)
		if err != nil {
			fmt.Fprintf(env.stderr, "tpu bench latency: %v\n", err)
			return 1
		}
		r := benchRow{label: fmt.Sprintf("%g%%: %.0f", p, s.OfferedTPS), s: s}
		if s.FromScheduled != nil {
			r.lat = *s.FromScheduled
		}
		rows = append(rows, r)
	}
	writeLatencyTable(env.stdout, rows, knobs, *duration)
	return 0
}

// benchRow is one run of tpu bench latency.
type benchRow struct {
	label string
	s     summary
	lat   latencyQuantiles
}

// writeLatencyTable prints the runs as a markdown table, then the knobs.
func writeLatencyTable(w io.Writer, rows []benchRow, k runFlags, d time.Duration) {
	fmt.Fprintf(w, "| offered tx/s | achieved tx/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | sender behind at most, ms |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|\n")
	ms := func(us float64) string { return strconv.FormatFloat(us/1e3, 'f', 2, 64) }
	for _, r := range rows {
		behind := "closed-loop"
		if r.s.SenderBehind != nil {
			behind = ms(r.s.SenderBehind.Max)
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s | %s | %s |\n", r.label, r.s.TPS,
			ms(r.lat.P50), ms(r.lat.P90), ms(r.lat.P99), ms(r.lat.P999), ms(r.lat.Max), behind)
	}
	fmt.Fprintf(w, "\nLatency: open-loop rows from each transaction's scheduled send to its execution; the closed-loop row from the socket. %v per run.\n", d)
	fmt.Fprintf(w, "Knobs: --fetch-coalesce %v --fetch-credits %d --banking-credits %d --sigverify-max-pending %d --dedup-bits %d --dedup-max-age %v --slot-time %v --batch-size %d --buffer %d --num-workers %d --block-production-method %s --handoff %s --sigverify-backend %s --sync %s --send-batch %d --invalid-fraction %g\n",
		k.fetchCoalesce, k.fetchCredits, k.bankingCredits, k.maxPending, k.dedupBits, k.dedupMaxAge, k.slotTime,
		k.batchSize, k.capacity, k.workers, k.method, k.handoff, k.backend, k.syncMode, k.sendBatch, k.invalid)
}

// parseLevels reads --levels: percentages above 0, at most 100.
func parseLevels(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(p > 0 && p <= 100) {
			return nil, fmt.Errorf("--levels %q: want percentages above 0 and at most 100, comma-separated", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// benchRunArgs checks the tpu run flags given after --: they parse, they
// do not set what the bench sets, and the knobs they give are valid. It
// returns the flags, for the knobs' values.
func benchRunArgs(args []string) (runFlags, error) {
	fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
	var msg strings.Builder
	fs.SetOutput(&msg)
	f := defineRunFlags(fs)
	if err := fs.Parse(args); err != nil {
		return runFlags{}, fmt.Errorf("tpu run flags: %v", err)
	}
	if fs.NArg() > 0 {
		return runFlags{}, fmt.Errorf("tpu run flags: unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	fs.Visit(func(fl *flag.Flag) {
		for _, n := range benchRunFlags {
			if fl.Name == n {
				errs = append(errs, fmt.Errorf("--%s: tpu bench latency sets it itself", n))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return runFlags{}, err
	}
	if _, err := graphConfig(*f); err != nil {
		return runFlags{}, err
	}
	return *f, nil
}
