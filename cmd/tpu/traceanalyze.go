package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/tpugo/tpu/trace"
)

func init() {
	register(command{
		name:    "trace analyze",
		summary: "read a --trace-out file: span durations per hop, tracer packets' paths",
		run:     runTraceAnalyze,
	})
}

const traceAnalyzeHelp = `Usage: tpu trace analyze [--tracers N] FILE

Reads the spans tpu run wrote with --trace-out (JSON lines, the OTel SDK's
stdout exporter format) and prints where the tracer packets' time went
(tpu run --tracer-every): socket to executed and to committed, cut into
segments that add up to it (each hop's service time and each wait between
and inside hops), each with its p50, p99 and share of the total. Then, per hop, how many spans it saw and
their durations (p50, p90, p99, p99.9, max), whether every span found its
parent and every link its span, and the path of each tracer packet (tpu
run --tracer-every) from the socket to the commit: its steps, each an
instant on the span of the work it belongs to, with the time since the
previous step. Steps are never counted as hop durations.

Flags:`

func runTraceAnalyze(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu trace analyze", traceAnalyzeHelp)
	maxTracers := fs.Int("tracers", 10, "tracer paths to print (0: all)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu trace analyze: %v\n", err)
		return 1
	}
	defer f.Close()
	spans, err := trace.ReadSpans(f)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu trace analyze: %v\n", err)
		return 1
	}
	// The answer first: where the tracers' time went.
	if b := trace.Summarize(trace.BreakDown(spans)); b.Tracers > 0 {
		printBreakdown(env.stdout, b)
	}
	printAnalysis(env.stdout, trace.Analyze(spans), *maxTracers)
	return 0
}

// printAnalysis writes a's text summary: hop statistics from span
// durations, then tracer paths as steps (instants) with the time since
// the previous step; the two are never mixed.
func printAnalysis(w io.Writer, a trace.Analysis, maxTracers int) {
	fmt.Fprintf(w, "%d spans in %d traces; %d children found their parent, %d did not; %d links found their span, %d did not\n",
		a.Spans, a.Traces, a.Children, a.Orphans, a.Links, a.Dangling)
	if a.Markers > 0 {
		fmt.Fprintf(w, "%d zero-length tracer marker spans (an older trace file) left out of the hop statistics\n", a.Markers)
	}
	names := make([]string, 0, len(a.Hops))
	for n := range a.Hops {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "hops (span durations):\n")
	for _, n := range names {
		h := a.Hops[n]
		fmt.Fprintf(w, "  %-18s %7d spans  p50 %10v  p90 %10v  p99 %10v  p99.9 %10v  max %10v\n", n, h.Count, h.P50, h.P90, h.P99, h.P999, h.Max)
	}
	fmt.Fprintf(w, "%d tracer packets (steps, with the time since the previous step)\n", len(a.Tracers))
	for i, p := range a.Tracers {
		if maxTracers > 0 && i >= maxTracers {
			fmt.Fprintf(w, "  ... %d more\n", len(a.Tracers)-i)
			break
		}
		fmt.Fprintf(w, "  tracer %s (trace %s)\n", p.Signature, p.TraceID)
		for j, s := range p.Steps {
			delta := ""
			if j > 0 {
				delta = "+" + s.Since.String()
			}
			outcome, _ := s.Attrs["tpu.outcome"].(string)
			fmt.Fprintf(w, "    %-22s %-18s %-12s %s\n", s.Event, s.Hop, delta, outcome)
		}
	}
}
