package trace_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/trace"
)

// TestServeMetrics scrapes /metrics on a port the system picked, finds
// the counts recorded, and finds the port closed after Shutdown.
func TestServeMetrics(t *testing.T) {
	p, err := trace.Setup(context.Background(), trace.Config{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	url := p.MetricsURL()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasPrefix(url, "http://127.0.0.1:0/") || !strings.HasSuffix(url, "/metrics") {
		t.Fatalf("MetricsURL %q", url)
	}
	lat, err := p.Latency("tpu.test.latency", "a test's latency")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{3 * time.Microsecond, 3 * time.Microsecond, 40 * time.Millisecond} {
		lat.Record(d)
	}
	p.Hop("sigverify").Record(time.Millisecond, 2*time.Millisecond)

	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d:\n%s", resp.StatusCode, body)
	}
	// A Latency: in its own histogram for summaries, and at /metrics in
	// seconds, spread over the 1-2-5 buckets.
	if lat.Count() != 3 || lat.Max() != 40*time.Millisecond {
		t.Errorf("latency histogram: %d observations, max %v", lat.Count(), lat.Max())
	}
	for le, n := range map[string]string{"2e-06": "0", "5e-06": "2", "0.02": "2", "0.05": "3", "+Inf": "3"} {
		if !hasSample(body, "tpu_test_latency_seconds_bucket{", `le="`+le+`"`, n) {
			t.Errorf("no tpu_test_latency_seconds_bucket le=%s = %s in:\n%s", le, n, grepLines(body, "tpu_test_latency"))
		}
	}
	if !hasSample(body, "tpu_hop_service_seconds_count{", `hop="sigverify"`, "1") ||
		!hasSample(body, "tpu_hop_queue_wait_seconds_count{", `hop="sigverify"`, "1") {
		t.Errorf("no hop histogram counts for sigverify in:\n%s", body)
	}

	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Fatalf("%s still served after Shutdown", url)
	}
	if p.MetricsURL() != url {
		t.Fatalf("MetricsURL changed after Shutdown")
	}
}

// hasSample reports whether body has a line of metric prefix with label
// and value n.
func hasSample(body, prefix, label, n string) bool {
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, label) && strings.HasSuffix(l, "} "+n) {
			return true
		}
	}
	return false
}

// TestServeMetricsAddressInUse: a port taken is an error of the
// environment naming the address, not a config error, and Setup leaves
// nothing listening.
func TestServeMetricsAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	p, err := trace.Setup(context.Background(), trace.Config{MetricsAddr: addr})
	if err == nil {
		p.Shutdown(context.Background())
		t.Fatal("Setup served metrics on a port in use")
	}
	if errors.Is(err, trace.ErrConfig) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %q: want the address, not ErrConfig", err)
	}
}

func TestMetricsAddrValidate(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"", true},
		{"127.0.0.1:9090", true},
		{":0", true},
		{"[::1]:0", true},
		{"9090", false},
		{"localhost", false},
	} {
		err := trace.Config{MetricsAddr: tc.addr}.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, trace.ErrConfig)) {
			t.Errorf("MetricsAddr %q: %v", tc.addr, err)
		}
	}
}

func TestNoMetricsURL(t *testing.T) {
	p, err := trace.Setup(context.Background(), trace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	if u := p.MetricsURL(); u != "" {
		t.Fatalf("MetricsURL %q without MetricsAddr", u)
	}
}

// Latency.Record, with a metric reader collecting it, allocates nothing:
// banking records one per transaction executed.
func TestLatencyRecordAllocs(t *testing.T) {
	p, err := trace.Setup(context.Background(), trace.Config{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	lat, err := p.Latency("tpu.test.allocs", "a test's latency")
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { lat.Record(700 * time.Microsecond) }); n != 0 {
		t.Fatalf("Latency.Record: %v allocations", n)
	}
}

// TestServeHeapProfile fetches the heap profile beside /metrics: a
// gzipped protocol buffer (pprof's format) naming the in-use samples.
func TestServeHeapProfile(t *testing.T) {
	p, err := trace.Setup(context.Background(), trace.Config{MetricsAddr: "127.0.0.1:0", Pprof: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	resp, err := http.Get(strings.TrimSuffix(p.MetricsURL(), "/metrics") + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatalf("not gzipped: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	// The sample types' names are in the profile's string table.
	for _, want := range []string{"inuse_space", "alloc_space"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the profile (%d bytes) names no %s", len(b), want)
		}
	}
}
