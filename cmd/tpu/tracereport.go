package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/cpustage"
	"github.com/tpugo/tpu/trace/report"
)

func init() {
	register(command{
		name:    "trace report",
		summary: "the analyze summary of a --trace-out file, and with --html a page of charts",
		run:     runTraceReport,
	})
}

const traceReportHelp = `Usage: tpu trace report [--html OUT] [--summary JSON] [--bin D] [--slowest N] FILE

Prints what tpu trace analyze prints for FILE (spans tpu run wrote with
--trace-out). With --html, also writes OUT: one self-contained HTML page
(inline SVG, no script, nothing fetched; open it offline) that leads with
the answer, where the tracer packets' time went (tpu run --tracer-every):

  - one sentence: socket to executed and to committed, p50 and p99, and
    the segment with the largest share,
  - the tracers' end-to-end latency as a CDF (socket to executed, socket
    to committed), beside their segments' shares as a stacked bar (each
    hop's service time and each wait between and inside hops: fetch
    coalescing, sigverify's queue, banking's buffer until scheduled, the
    worker queue, the wait for the commit, ...; they add up),
  - each segment's CDF and its p99 over time (from the first packet),
  - with --summary (the run's --summary-json), the CPU each stage spent
    per transaction executed (its stage_cpu), a bar per stage,

then the hops' own span charts (durations as CDFs, throughput and p99
over time in bins of --bin from the first packet, the y-axis clipped
above a spike with what ran off marked, each hop's share of the time
within traces), the --slowest tracer packets as waterfalls (one bar per
interval between consecutive steps), and last, folded, the text summary.

Exit status 1 if FILE cannot be read, holds no span, or is not a trace
file, or if --summary cannot be read or holds no stage_cpu; 2 on a usage
error.

Flags:`

func runTraceReport(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu trace report", traceReportHelp)
	out := fs.String("html", "", "write the HTML report to this file")
	bin := fs.Duration("bin", report.DefaultBin, "width of the time bins of the over-time charts")
	slowest := fs.Int("slowest", report.DefaultSlowest, "tracer packets drawn as waterfalls, the slowest first")
	sumPath := fs.String("summary", "", "the run's --summary-json: draw its CPU by stage (stage_cpu) too")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	cfg := report.Config{Bin: *bin, Slowest: *slowest, Title: "tpu trace report: " + fs.Arg(0)}
	if *bin <= 0 || *slowest <= 0 {
		fmt.Fprintf(env.stderr, "tpu trace report: --bin and --slowest must be more than 0\n")
		return 2
	}
	spans, err := readTrace(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu trace report: %v\n", err)
		return 1
	}
	if *sumPath != "" {
		if cfg.StageCPU, err = readStageCPU(*sumPath); err != nil {
			fmt.Fprintf(env.stderr, "tpu trace report: --summary: %v\n", err)
			return 1
		}
	}
	// The summary is tpu trace analyze's own output, printed and put in
	// the page as it is.
	var summary bytes.Buffer
	if code := runTraceAnalyze(&cliEnv{stdin: env.stdin, stdout: io.MultiWriter(env.stdout, &summary), stderr: env.stderr, getenv: env.getenv}, []string{fs.Arg(0)}); code != 0 {
		return code
	}
	if *out == "" {
		return 0
	}
	var page bytes.Buffer
	if err := report.WriteHTML(&page, spans, summary.String(), cfg); err != nil {
		fmt.Fprintf(env.stderr, "tpu trace report: %v\n", err)
		return 1
	}
	if err := os.WriteFile(*out, page.Bytes(), 0o644); err != nil {
		fmt.Fprintf(env.stderr, "tpu trace report: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "wrote %s\n", *out)
	return 0
}

// errNotTrace is returned for a file whose lines are JSON but not spans.
var errNotTrace = errors.New("not a trace file (tpu run --trace-out writes one)")

// readTrace reads a --trace-out file, refusing an empty one and one whose
// records are not spans.
func readTrace(path string) ([]trace.SpanRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	spans, err := trace.ReadSpans(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(spans) == 0 {
		return nil, fmt.Errorf("%s: %w", path, report.ErrNoSpans)
	}
	for i, s := range spans {
		if s.Name == "" || s.TraceID == "" || s.SpanID == "" || s.Start.IsZero() {
			return nil, fmt.Errorf("%s: record %d is not a span (no name, IDs or start time): %w", path, i+1, errNotTrace)
		}
	}
	return spans, nil
}

// readStageCPU reads the CPU by stage of a run's --summary-json file, in
// the stages' order (trace/cpustage).
func readStageCPU(path string) ([]report.StageCPU, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sum struct {
		StageCPU *stageCPUSummary `json:"stage_cpu"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if sum.StageCPU == nil || len(sum.StageCPU.Stages) == 0 {
		return nil, fmt.Errorf("%s: no stage_cpu (tpu run --summary-json writes it, unless another CPU profile ran)", path)
	}
	var out []report.StageCPU
	for st := range cpustage.NumStages {
		if f, ok := sum.StageCPU.Stages[st.String()]; ok {
			out = append(out, report.StageCPU{Stage: st.String(), USPerTx: f.USPerTx, Share: f.Share})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: stage_cpu names no stage tpu knows", path)
	}
	return out, nil
}
