package main

import (
	"fmt"
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
stdout exporter format) and prints, per hop, how many batches it saw and
their span durations, whether every span found its parent, and the path
of each tracer packet (tpu run --tracer-every) from the socket to the
commit, with the time between steps.

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
	a := trace.Analyze(spans)
	w := env.stdout
	fmt.Fprintf(w, "%d spans in %d traces; %d children found their parent, %d did not\n", a.Spans, a.Traces, a.Children, a.Orphans)
	names := make([]string, 0, len(a.Hops))
	for n := range a.Hops {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := a.Hops[n]
		fmt.Fprintf(w, "  %-18s %7d spans  p50 %10v  p90 %10v  p99 %10v\n", n, h.Count, h.P50, h.P90, h.P99)
	}
	fmt.Fprintf(w, "%d tracer packets\n", len(a.Tracers))
	for i, p := range a.Tracers {
		if *maxTracers > 0 && i >= *maxTracers {
			fmt.Fprintf(w, "  ... %d more\n", len(a.Tracers)-i)
			break
		}
		fmt.Fprintf(w, "  tracer %s (trace %s)\n", p.Signature, p.TraceID)
		for j, s := range p.Steps {
			delta := ""
			if j > 0 {
				delta = fmt.Sprintf("+%v", s.Time.Sub(p.Steps[j-1].Time))
			}
			outcome, _ := s.Attrs["tpu.outcome"].(string)
			fmt.Fprintf(w, "    %-16s %-18s %-12s %s\n", s.Hop, s.Event, delta, outcome)
		}
	}
	return 0
}
