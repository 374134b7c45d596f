//go:build jaeger

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpugo/tpu/stages"
)

// TestJaeger runs a real Jaeger (v1.76.0's all-in-one, memory storage,
// every port on 127.0.0.1), sends it a short tpu run's spans over OTLP
// gRPC, and reads them back through Jaeger's HTTP query API:
//
//   - every hop (stages.HopNames) has spans, and some trace holds the
//     batch's path fetch -> sigverify -> banking.schedule ->
//     banking.execute;
//   - every parent reference (CHILD_OF) resolves to a span of its trace;
//   - each banking.execute span follows the work it ran: its parent is a
//     banking.schedule span, it links (FOLLOWS_FROM, Jaeger's form of an
//     OTel link) to the banking.schedule span of every source batch it
//     drew from, the parent among them, and each link resolves.
//
// Opt-in: go test -tags jaeger, with TPU_JAEGER naming the jaeger binary
// (scripts/jaeger-check.sh builds it and runs this test). It needs ports
// 4317, 4318, 5778, 5779, 6831, 6832, 8888, 9411, 13133, 14250, 14268,
// 16685, 16686, 27777 and 27778 free on 127.0.0.1.
func TestJaeger(t *testing.T) {
	bin := os.Getenv("TPU_JAEGER")
	if bin == "" {
		t.Fatal("TPU_JAEGER must name the jaeger v1.76.0 binary (scripts/jaeger-check.sh builds it)")
	}
	const otlp, query = "127.0.0.1:4317", "127.0.0.1:16686"
	startJaeger(t, bin, query)

	dir := t.TempDir()
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "3s", "--rate", "2000", "--accounts", "64", "--sync", "nosync",
		"--trace-sample", "1", "--tracer-every", "100", "--otlp-endpoint", otlp)
	if code != 0 {
		t.Fatalf("tpu run: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("tpu run --otlp-endpoint %s --duration 3s --rate 2000 --trace-sample 1 --tracer-every 100: exit 0", otlp)

	// Jaeger's memory store takes the spans asynchronously (the collector
	// batches them) and says nothing when it has: poll the query API
	// until the service is listed, for at most 30 s.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var services struct{ Data []string }
		getJSON(t, "http://"+query+"/api/services", &services)
		if contains(services.Data, "tpu") {
			t.Logf("/api/services: %v", services.Data)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service tpu not listed by Jaeger after 30 s: %v", services.Data)
		}
		time.Sleep(200 * time.Millisecond)
	}

	var found struct{ Data []jTrace }
	getJSON(t, "http://"+query+"/api/traces?service=tpu&lookback=1h&limit=300", &found)
	if len(found.Data) == 0 {
		t.Fatal("no tpu traces in Jaeger")
	}
	traces := map[string]jTrace{}
	for _, tr := range found.Data {
		traces[tr.TraceID] = tr
	}
	spanByID := func(traceID, spanID string) (jSpan, bool) {
		tr, ok := traces[traceID]
		if !ok {
			// A link may point into a trace the search did not return.
			var one struct{ Data []jTrace }
			getJSON(t, "http://"+query+"/api/traces/"+traceID, &one)
			if len(one.Data) == 0 {
				return jSpan{}, false
			}
			tr = one.Data[0]
			traces[traceID] = tr
		}
		for _, s := range tr.Spans {
			if s.SpanID == spanID {
				return s, true
			}
		}
		return jSpan{}, false
	}

	ops := map[string]int{}
	spans, parents, full, allHops := 0, 0, 0, 0
	var unresolved []string
	for _, tr := range found.Data {
		inTrace := map[string]bool{}
		for _, s := range tr.Spans {
			spans++
			ops[s.OperationName]++
			inTrace[s.OperationName] = true
			for _, r := range s.References {
				if r.RefType != "CHILD_OF" {
					continue
				}
				parents++
				if r.TraceID != s.TraceID {
					unresolved = append(unresolved, fmt.Sprintf("%s %s: parent in another trace %s", s.OperationName, s.SpanID, r.TraceID))
				} else if _, ok := spanByID(r.TraceID, r.SpanID); !ok {
					unresolved = append(unresolved, fmt.Sprintf("%s %s: parent %s not in its trace", s.OperationName, s.SpanID, r.SpanID))
				}
			}
		}
		if inTrace["fetch"] && inTrace["sigverify"] && inTrace["banking.schedule"] && inTrace["banking.execute"] {
			full++
		}
		if all(inTrace, stages.HopNames) {
			allHops++
		}
	}
	t.Logf("%d traces, %d spans, by operation %v; %d parent references; %d traces hold fetch -> sigverify -> banking.schedule -> banking.execute, %d every hop",
		len(found.Data), spans, ops, parents, full, allHops)
	for _, h := range stages.HopNames {
		if ops[h] == 0 {
			t.Errorf("no %s span in Jaeger", h)
		}
	}
	if full == 0 {
		t.Errorf("no trace holds a batch's path fetch -> sigverify -> banking.schedule -> banking.execute")
	}
	for i, u := range unresolved {
		if i == 10 {
			t.Errorf("... %d more unresolved parents", len(unresolved)-i)
			break
		}
		t.Errorf("unresolved: %s", u)
	}

	// banking.execute: its parent is the oldest source batch's schedule
	// span and it links to every source batch's schedule span, the parent
	// among them (trace/doc.go). Jaeger turns an OTel link into a
	// FOLLOWS_FROM reference and, the parent being one of the links, shows
	// it once, as FOLLOWS_FROM: so every reference must resolve to a
	// schedule span, and one of them (the parent) must be in the execute
	// span's own trace.
	execs, linked, badParent, badLinks := 0, 0, 0, 0
	var examples []string
	for _, tr := range found.Data {
		for _, s := range tr.Spans {
			if s.OperationName != "banking.execute" {
				continue
			}
			execs++
			if len(s.References) == 0 {
				badParent++
				continue
			}
			linked++
			inTrace := false
			for _, r := range s.References {
				if r.RefType != "CHILD_OF" && r.RefType != "FOLLOWS_FROM" {
					badLinks++
					continue
				}
				p, ok := spanByID(r.TraceID, r.SpanID)
				if !ok || p.OperationName != "banking.schedule" {
					badLinks++
					if len(examples) < 6 {
						examples = append(examples, fmt.Sprintf("execute %s: %s %s/%s resolves %v to %q", s.SpanID, r.RefType, r.TraceID, r.SpanID, ok, p.OperationName))
					}
				}
				if r.TraceID == tr.TraceID {
					inTrace = true
				}
			}
			if !inTrace {
				badParent++
				if len(examples) < 6 {
					examples = append(examples, fmt.Sprintf("execute %s: no reference in its own trace %s (its parent)", s.SpanID, tr.TraceID))
				}
			}
		}
	}
	t.Logf("%d banking.execute spans: %d with references to schedule spans, %d without their parent in their trace, %d bad references", execs, linked, badParent, badLinks)
	for _, e := range examples {
		t.Log(e)
	}
	if execs == 0 || linked != execs || badParent > 0 || badLinks > 0 {
		t.Errorf("banking.execute spans do not follow the work they ran: %d spans, %d with links, %d bad parents, %d bad links", execs, linked, badParent, badLinks)
	}
}

type jRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []jRef `json:"references"`
}

type jTrace struct {
	TraceID string  `json:"traceID"`
	Spans   []jSpan `json:"spans"`
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func all(set map[string]bool, names []string) bool {
	for _, n := range names {
		if !set[n] {
			return false
		}
	}
	return true
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v: %.300s", url, resp.Status, err, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %.300s", url, err, b)
	}
}

// startJaeger starts the all-in-one with its built-in configuration,
// every listener on 127.0.0.1 (JAEGER_LISTEN_HOST, and the query
// service's own endpoints, which default to all interfaces), waits for
// its "Everything is ready" log line, and stops it when the test ends.
func startJaeger(t *testing.T, bin, query string) {
	cmd := exec.Command(bin,
		"--set=extensions.jaeger_query.http.endpoint="+query,
		"--set=extensions.jaeger_query.grpc.endpoint=127.0.0.1:16685")
	cmd.Env = append(os.Environ(), "JAEGER_LISTEN_HOST=127.0.0.1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	ready := make(chan struct{})
	var mu sync.Mutex
	var logTail []string // until ready
	tail := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(logTail, "\n")
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := false
		for sc.Scan() {
			line := sc.Text()
			if !once {
				mu.Lock()
				logTail = append(logTail, line)
				mu.Unlock()
			}
			if !once && strings.Contains(line, "Everything is ready") {
				once = true
				close(ready)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			t.Logf("jaeger stopped: %v", err)
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("jaeger did not stop within 20 s of SIGINT; killed")
		}
	})
	select {
	case <-ready:
		t.Logf("jaeger %s ready: OTLP gRPC 127.0.0.1:4317, query http://%s", bin, query)
	case err := <-exited:
		t.Fatalf("jaeger exited before it was ready (%v):\n%s", err, tail())
	case <-time.After(90 * time.Second):
		t.Fatalf("jaeger not ready after 90 s:\n%s", tail())
	}
}
