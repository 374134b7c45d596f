package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceAnalyzeKeepsStepsApart: a zero-length marker span, as older
// files hold for tracer steps, is not reported as a hop duration; a
// real span's quantiles reach p99.9 and max; a tracer's steps print with
// the time since the previous one, across traces.
func TestTraceAnalyzeKeepsStepsApart(t *testing.T) {
	const file = `{"Name":"fetch","SpanContext":{"TraceID":"01","SpanID":"0a"},"StartTime":"2026-01-01T00:00:00Z","EndTime":"2026-01-01T00:00:00.003Z","Events":[{"Name":"tracer.received","Time":"2026-01-01T00:00:00.001Z","Attributes":[{"Key":"tpu.sig","Value":{"Type":"STRING","Value":"ab"}}]}]}
{"Name":"banking.execute","SpanContext":{"TraceID":"01","SpanID":"0b"},"Parent":{"TraceID":"01","SpanID":"0a"},"Links":[{"SpanContext":{"TraceID":"01","SpanID":"0a"}}],"StartTime":"2026-01-01T00:00:00.010Z","EndTime":"2026-01-01T00:00:00.040Z","Events":[{"Name":"tracer.executed","Time":"2026-01-01T00:00:00.035Z","Attributes":[{"Key":"tpu.sig","Value":{"Type":"STRING","Value":"ab"}}]}]}
{"Name":"banking.commit","SpanContext":{"TraceID":"02","SpanID":"0c"},"StartTime":"2026-01-01T00:00:00.050Z","EndTime":"2026-01-01T00:00:00.050Z","Events":[{"Name":"tracer.committed","Time":"2026-01-01T00:00:00.050Z","Attributes":[{"Key":"tpu.sig","Value":{"Type":"STRING","Value":"ab"}}]}]}
`
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "trace", "analyze", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"1 children found their parent, 0 did not; 1 links found their span, 0 did not",
		"1 zero-length tracer marker spans",
		"banking.execute          1 spans  p50       30ms  p90       30ms  p99       30ms  p99.9       30ms  max       30ms",
		"tracer.executed        banking.execute    +34ms",
		"tracer.committed       banking.commit     +15ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\n  banking.commit ") { // a hop line; steps are indented further
		t.Errorf("the marker span is reported as a hop:\n%s", out)
	}
}
