package main

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tpugo/tpu/trace"
)

// TestMetricsMatchSummary runs tpu run's pipeline with a load a third
// invalid, and small batches and budgets so that fetch drops some for want
// of credits; then scrapes /metrics (still served: the provider outlives
// the graph, as in runPipeline) and finds every counter of the summary
// there with the same figure: received, socket_dropped, each outcome
// (summed over the stages that decide it), executed, buffered, live
// batches, slots; and the socket-to-executed latency histogram with one
// observation per transaction executed, spread over several buckets;
// the fan-out's copies; and, run again with the copy handoff and
// --forward-to a local sink, the forwarder's counts by result.
func TestMetricsMatchSummary(t *testing.T) {
	t.Run("handoff=refcount", func(t *testing.T) { metricsMatchSummary(t, false) })
	t.Run("handoff=copy,forward", func(t *testing.T) { metricsMatchSummary(t, true) })
}

func metricsMatchSummary(t *testing.T, copyForward bool) {
	dir := t.TempDir()
	fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
	f := defineRunFlags(fs)
	args := []string{"--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--metrics-addr", "127.0.0.1:0",
		"--ledger", filepath.Join(dir, "ledger"), "--summary-json", filepath.Join(dir, "summary.json"),
		"--duration", "0", "--count", "6000", "--accounts", "64", "--invalid-fraction", "0.3",
		"--batch-size", "4", "--fetch-credits", "2", "--send-batch", "64"}
	if copyForward {
		// The next leader: a socket that reads and discards. At one
		// packet a second, the forwarder sends the first and drops
		// most of the rest (rate_limited).
		sink, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		go func() {
			buf := make([]byte, 2048)
			for {
				if _, _, err := sink.ReadFrom(buf); err != nil {
					return // closed
				}
			}
		}()
		args = append(args, "--handoff", "copy", "--forward-to", sink.LocalAddr().String(), "--forward-over", "udp", "--forward-rate", "1")
	}
	if err := fs.Parse(args); err != nil {
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
	if code, err := runGraph(env, *f, cfg, prov, nil, log); code != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	m := scrape(t, prov.MetricsURL())

	expect := func(what string, got float64, want uint64) {
		t.Helper()
		if got != float64(want) {
			t.Errorf("%s: /metrics %v, summary %d", what, got, want)
		}
	}
	expect("received", m.sum("tpu_fetch_received_total", nil), s.Received)
	expect("socket_dropped", m.sum("tpu_fetch_socket_dropped_total", nil), s.SocketDropped)
	expect("fetch_spared", m.sum("tpu_fetch_spared_total", nil), s.FetchSpared)
	if len(m["tpu_fetch_spared_total"]) != 1 {
		t.Errorf("tpu_fetch_spared_total: %v, want one series", m["tpu_fetch_spared_total"])
	}
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
	expect("fan-out copies", m.sum("tpu_fanout_copies_total", nil), s.Copies)
	if !copyForward {
		if s.Copies != 0 || s.Forward != nil || len(m["tpu_forward_packets_total"]) != 0 {
			t.Errorf("refcount, no forwarder: copies %d, forward %+v, series %v", s.Copies, s.Forward, m["tpu_forward_packets_total"])
		}
	} else {
		fw := s.Forward
		if fw == nil || fw.Forwarded == 0 || fw.RateLimited == 0 || s.Copies == 0 {
			t.Fatalf("copy handoff, forwarding at 1/s: copies %d, forward %+v", s.Copies, fw)
		}
		for _, c := range []struct {
			result string
			n      uint64
		}{{"forwarded", fw.Forwarded}, {"vote", fw.Votes}, {"rate_limited", fw.RateLimited}, {"send_error", fw.SendErrors}, {"queue_full", fw.QueueFull}} {
			expect("forward "+c.result, m.sum("tpu_forward_packets_total", map[string]string{"result": c.result}), c.n)
		}
		expect("forward, all results", m.sum("tpu_forward_packets_total", nil), fw.Offered)
		if n := len(m["tpu_forward_packets_total"]); n != 5 {
			t.Errorf("%d tpu_forward_packets_total series, want 5 (zeros included)", n)
		}
	}

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

	// The latency histogram spreads (its observations are not all in one
	// bucket: cumulative counts step up at two bounds or more) and says
	// what the summary says: the bucket bounds around the summary's p50,
	// p90 and p99 hold the right shares of the observations (the summary
	// is within trace.HistogramError of exact, hence the margins).
	steps, prev := 0, 0.0
	buckets := m["tpu_latency_socket_to_executed_seconds_bucket"]
	for _, smp := range buckets {
		if smp.value > prev {
			steps++
		}
		prev = smp.value
	}
	if steps < 2 {
		t.Errorf("socket-to-executed observations in %d buckets, want 2 or more:\n%v", steps, buckets)
	}
	total := float64(s.Executed)
	for _, q := range []struct {
		share float64
		us    float64
	}{{0.5, s.Latency.P50}, {0.9, s.Latency.P90}, {0.99, s.Latency.P99}} {
		lo, hi := q.us*(1-trace.HistogramError)/1e6, q.us*(1+trace.HistogramError)/1e6 // seconds
		for _, smp := range buckets {
			le, err := strconv.ParseFloat(smp.labels["le"], 64)
			if err != nil {
				continue // +Inf
			}
			if le < lo && smp.value > q.share*total {
				t.Errorf("/metrics: %v of %v observations at or below %v s, but the summary's p%v is %v us", smp.value, total, le, q.share*100, q.us)
			}
			if le >= hi && smp.value < q.share*total {
				t.Errorf("/metrics: only %v of %v observations at or below %v s, but the summary's p%v is %v us", smp.value, total, le, q.share*100, q.us)
			}
		}
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
