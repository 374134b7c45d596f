package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMetricsMatchSummary runs tpu run's pipeline with a load a third
// invalid, and small batches and budgets so that fetch drops some for want
// of credits; then scrapes /metrics (still served: the provider outlives
// the graph, as in runPipeline) and finds every counter of the summary
// there with the same figure: received, socket_dropped, each outcome
// (summed over the stages that decide it), executed, buffered, live
// batches, slots; and the socket-to-executed latency histogram with one
// observation per transaction executed, spread over several buckets.
func TestMetricsMatchSummary(t *testing.T) {
	dir := t.TempDir()
	fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
	f := defineRunFlags(fs)
	if err := fs.Parse([]string{"--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--metrics-addr", "127.0.0.1:0",
		"--ledger", filepath.Join(dir, "ledger"), "--summary-json", filepath.Join(dir, "summary.json"),
		"--duration", "0", "--count", "6000", "--accounts", "64", "--invalid-fraction", "0.3",
		"--batch-size", "4", "--fetch-credits", "2", "--send-batch", "64"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := graphConfig(*f)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prov, closeTrace, err := startTrace(*f, log)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTrace()
	if code, err := runGraph(env, *f, cfg, prov, log); code != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	m := scrape(t, prov.MetricsURL())

	expect := func(what string, got float64, want uint64) {
		t.Helper()
		if got != float64(want) {
			t.Errorf("%s: /metrics %v, summary %d", what, got, want)
		}
	}
	expect("received", m.sum("tpu_fetch_received_total", nil), s.Received)
	expect("socket_dropped", m.sum("tpu_fetch_socket_dropped_total", nil), s.SocketDropped)
	expect("buffered", m.sum("tpu_banking_buffered", nil), s.Buffered)
	expect("live batches", m.sum("tpu_pool_live", nil), s.LiveBatches)
	expect("slots", m.sum("tpu_banking_slots_total", nil), s.Slots)
	if len(m["tpu_goroutines"]) != 1 || m.sum("tpu_goroutines", nil) < 1 {
		t.Errorf("tpu_goroutines: %v, want one series counting at least this test's goroutine", m["tpu_goroutines"])
	}
	for name, n := range s.Outcomes {
		expect("outcome "+name, m.sum("tpu_packets_total", map[string]string{"outcome": name}), n)
	}
	var outcomes uint64
	for _, n := range s.Outcomes {
		outcomes += n
	}
	expect("all outcomes", m.sum("tpu_packets_total", nil), outcomes)
	expect("executed", m.sum("tpu_packets_total", map[string]string{"stage": "banking", "outcome": "executed_ok"})+
		m.sum("tpu_packets_total", map[string]string{"stage": "banking", "outcome": "executed_failed"}), s.Executed)
	expect("socket-to-executed observations", m.sum("tpu_latency_socket_to_executed_seconds_count", nil), s.Executed)

	// The stage label: every series names fetch, sigverify or banking, and
	// the drops this load provokes are where they happen.
	for _, smp := range m["tpu_packets_total"] {
		if st := smp.labels["stage"]; st != "fetch" && st != "sigverify" && st != "banking" {
			t.Errorf("tpu_packets_total series with stage %q: %v", st, smp.labels)
		}
	}
	for _, c := range []struct{ stage, outcome string }{
		{"sigverify", "bad_signature"}, {"sigverify", "parse"}, {"banking", "blockhash_not_found"},
		{"banking", "fee_payer_cannot_pay"}, {"banking", "executed_ok"},
	} {
		if m.sum("tpu_packets_total", map[string]string{"stage": c.stage, "outcome": c.outcome}) == 0 {
			t.Errorf("no %s at %s, with a third of the load invalid: %v", c.outcome, c.stage, s.Outcomes)
		}
	}
	if s.Received == 0 || s.Executed == 0 || !s.AccountingOK {
		t.Fatalf("the run did nothing worth comparing: %+v", s)
	}

	// The latency histogram spreads: its observations are not all in one
	// bucket (cumulative counts step up at three bounds or more).
	steps, prev := 0, 0.0
	for _, smp := range m["tpu_latency_socket_to_executed_seconds_bucket"] {
		if smp.value > prev {
			steps++
		}
		prev = smp.value
	}
	if steps < 3 {
		t.Errorf("socket-to-executed observations in %d buckets, want 3 or more:\n%v", steps, m["tpu_latency_socket_to_executed_seconds_bucket"])
	}
	t.Logf("received %d, executed %d, outcomes %v; latency spread over %d buckets", s.Received, s.Executed, s.Outcomes, steps)
}

type sample struct {
	labels map[string]string
	value  float64
}

// metrics is a scrape, by metric name, samples in the order served.
type metrics map[string][]sample

// sum adds the samples of name whose labels include want.
func (m metrics) sum(name string, want map[string]string) float64 {
	var total float64
next:
	for _, s := range m[name] {
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		total += s.value
	}
	return total
}

var labelRE = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// scrape reads url in Prometheus's text format.
func scrape(t *testing.T, url string) metrics {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %v %d", url, err, resp.StatusCode)
	}
	m := metrics{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if sp < 0 || err != nil {
			t.Fatalf("scrape: bad line %q", line)
		}
		name, labels := line[:sp], map[string]string{}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			for _, kv := range labelRE.FindAllStringSubmatch(name[i:], -1) {
				labels[kv[1]] = kv[2]
			}
			name = name[:i]
		}
		m[name] = append(m[name], sample{labels, v})
	}
	return m
}
