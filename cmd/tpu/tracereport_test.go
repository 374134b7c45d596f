package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace/cpustage"
)

func TestTraceReportErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty.jsonl", "")
	blank := write("blank.jsonl", "\n\n")
	text := write("text.txt", "hello, world\n")
	notSpans := write("other.jsonl", `{"level":"info","msg":"a log line"}`+"\n")
	// One span as tpu run's exporter writes it.
	oneSpan := write("one.jsonl", `{"Name":"fetch","SpanContext":{"TraceID":"0af7651916cd43dd8448eb211c80319c","SpanID":"b7ad6b7169203331"},`+
		`"StartTime":"2026-12-06T00:00:00Z","EndTime":"2026-12-06T00:00:00.001Z"}`+"\n")
	noStageCPU := write("summary.json", `{"received": 10}`)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing", []string{filepath.Join(dir, "nope.jsonl")}, 1, "no such file"},
		{"empty", []string{empty}, 1, "no spans in the trace"},
		{"blank lines only", []string{"--html", filepath.Join(dir, "x.html"), blank}, 1, "no spans in the trace"},
		{"not JSON", []string{text}, 1, "line 1"},
		{"JSON, not spans", []string{notSpans}, 1, "not a trace file"},
		{"no file", nil, 2, "Usage: tpu trace report"},
		{"two files", []string{empty, empty}, 2, "Usage: tpu trace report"},
		{"bin 0", []string{"--bin", "0", empty}, 2, "--bin and --slowest must be more than 0"},
		{"slowest -1", []string{"--slowest", "-1", empty}, 2, "--bin and --slowest must be more than 0"},
		{"bad flag", []string{"--no-such-flag", empty}, 2, "flag provided but not defined: -no-such-flag"},
		{"help", []string{"--help"}, 0, "Usage: tpu trace report"},
		{"summary missing", []string{"--summary", filepath.Join(dir, "nope.json"), oneSpan}, 1, "--summary: open"},
		{"summary not JSON", []string{"--summary", text, oneSpan}, 1, "--summary: " + text},
		{"summary without stage_cpu", []string{"--summary", noStageCPU, "--html", filepath.Join(dir, "x.html"), oneSpan}, 1, "no stage_cpu"},
	} {
		code, out, errOut := run(t, "", append([]string{"trace", "report"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q, want exit %d and %q (stdout %q)", c.name, code, errOut, c.code, c.want, out)
		}
	}
	if code, _, errOut := run(t, "", "trace", "report", "--help"); code != 0 || !strings.Contains(errOut, "-html") || !strings.Contains(errOut, "-slowest") {
		t.Errorf("--help lists no flags: %q", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.html")); !os.IsNotExist(err) {
		t.Errorf("a failed report left its HTML file behind (%v)", err)
	}
}

// pipelineTrace runs tpu run for a moment with every batch sampled and
// one packet in 100 a tracer, and returns its --trace-out file and its
// --summary-json file.
func pipelineTrace(t *testing.T, dir string) (traceOut, summary string) {
	t.Helper()
	traceOut, summary = filepath.Join(dir, "spans.jsonl"), filepath.Join(dir, "summary.json")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "1s", "--rate", "2000", "--accounts", "64", "--sync", "nosync",
		"--trace-sample", "1", "--tracer-every", "100", "--trace-out", traceOut, "--summary-json", summary)
	if code != 0 {
		t.Fatalf("tpu run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	return traceOut, summary
}

// stageCPULegend reads a run's --summary-json and returns what the CPU
// by stage chart must say of each stage, in the stages' order.
func stageCPULegend(t *testing.T, summary string) []string {
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		StageCPU struct {
			Stages map[string]struct {
				USPerTx float64 `json:"us_per_tx"`
				Share   float64 `json:"share"`
			} `json:"stages"`
		} `json:"stage_cpu"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var out []string
	for st := range cpustage.NumStages {
		f, ok := s.StageCPU.Stages[st.String()]
		if !ok {
			t.Fatalf("the summary has no stage_cpu for %s: %s", st, b)
		}
		out = append(out, fmt.Sprintf("%s %.2f us (%.1f%%)", st, f.USPerTx, 100*f.Share))
	}
	return out
}

var tracerCount = regexp.MustCompile(`(?m)^(\d+) tracer packets`)

// tracersLead is analyze's first line, the tracers followed to their
// execution, and the line after it when some were not.
var tracersLead = regexp.MustCompile(`^tracers: (\d+) tracer packets: socket to executed p50 .*\n(?:\s+\((\d+) more tracer packets not followed)?`)

// droppedPackets reads a run's --summary-json: the packets it gave an
// outcome other than executed.
func droppedPackets(t *testing.T, summary string) uint64 {
	t.Helper()
	var s struct {
		Outcomes map[string]uint64 `json:"outcomes"`
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var n uint64
	for o, c := range s.Outcomes {
		if o != packet.OutcomeExecutedOK.String() && o != packet.OutcomeExecutedFailed.String() {
			n += c
		}
	}
	return n
}

// TestTraceReport makes a report of a real run's trace and its summary's
// CPU by stage: the text is tpu trace analyze's, and the page is checked
// in a headless browser (checkPage) when one is found, its CPU by stage
// chart against the summary's figures.
func TestTraceReport(t *testing.T) {
	dir := t.TempDir()
	traceOut, summary := pipelineTrace(t, dir)
	page := filepath.Join(dir, "report.html")
	code, out, errOut := run(t, "", "trace", "report", "--html", page, "--summary", summary, traceOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, analyzed, _ := run(t, "", "trace", "analyze", traceOut)
	if !strings.HasPrefix(out, analyzed) || !strings.HasSuffix(out, "wrote "+page+"\n") {
		t.Fatalf("the report's text is not analyze's:\n%s\n--- analyze:\n%s", out, analyzed)
	}
	m := tracerCount.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no tracer count in %q", out)
	}
	tracers, _ := strconv.Atoi(m[1])
	if tracers < 2 {
		t.Fatalf("%d tracer packets in a run of 2,000 packets with --tracer-every 100", tracers)
	}
	// The answer comes first: the tracers followed from the socket to
	// their execution. On a calm machine that is every one; on one loaded
	// enough that sigverify sheds (a -race run beside another and other
	// work: p50 600 ms), those not followed are said, and no more than
	// the run dropped.
	lead := tracersLead.FindStringSubmatch(analyzed)
	if lead == nil {
		t.Fatalf("analyze does not lead with the tracers' breakdown:\n%s", analyzed)
	}
	followed, _ := strconv.Atoi(lead[1])
	notFollowed := 0
	if lead[2] != "" {
		notFollowed, _ = strconv.Atoi(lead[2])
	}
	if followed < 1 || followed+notFollowed != tracers {
		t.Errorf("analyze follows %d tracers and says %d are not followed, of %d:\n%s", followed, notFollowed, tracers, analyzed)
	}
	if dropped := droppedPackets(t, summary); uint64(notFollowed) > dropped {
		t.Errorf("%d tracers not followed to their execution, but the run dropped %d packets: spans lost", notFollowed, dropped)
	}
	checkPage(t, page, traceOut, min(tracers, 5), stageCPULegend(t, summary))
}
