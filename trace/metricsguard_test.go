package trace_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpugo/tpu/httpguard"
	"github.com/tpugo/tpu/trace"
)

func setupMetrics(t *testing.T, cfg trace.Config) *trace.Provider {
	t.Helper()
	p, err := trace.Setup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	return p
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// An address with no host serves on loopback only: --metrics-addr :port
// used to bind every interface.
func TestMetricsAddrWithoutHostIsLoopback(t *testing.T) {
	p := setupMetrics(t, trace.Config{MetricsAddr: ":0"})
	if u := p.MetricsURL(); !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("MetricsAddr :0 serves at %s, want 127.0.0.1", u)
	}
}

// Without Pprof there is no profile to take; with it, one at a time.
func TestHeapProfileBehindPprof(t *testing.T) {
	off := setupMetrics(t, trace.Config{MetricsAddr: "127.0.0.1:0"})
	if code, _ := get(t, strings.TrimSuffix(off.MetricsURL(), "/metrics")+"/debug/pprof/heap"); code != http.StatusNotFound {
		t.Fatalf("the heap profile without Pprof: HTTP %d, want 404", code)
	}

	entered, release := make(chan struct{}), make(chan struct{})
	trace.SetProfiling(func() { entered <- struct{}{}; <-release })
	defer trace.SetProfiling(nil)
	on := setupMetrics(t, trace.Config{MetricsAddr: "127.0.0.1:0", Pprof: true})
	url := strings.TrimSuffix(on.MetricsURL(), "/metrics") + "/debug/pprof/heap"
	first := make(chan int, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			first <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first profile did not start within 10s")
	}
	if code, body := get(t, url); code != http.StatusTooManyRequests {
		t.Fatalf("a second profile while one is taken: HTTP %d %q, want 429", code, body)
	}
	close(release)
	if code := <-first; code != http.StatusOK {
		t.Fatalf("the first profile: HTTP %d", code)
	}
}

// The header is capped (Go's default was 1 MiB: 2,000 connections of 1
// MB headers took 2.3 GB).
func TestMetricsHeaderLimit(t *testing.T) {
	p := setupMetrics(t, trace.Config{MetricsAddr: "127.0.0.1:0"})
	c, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(p.MetricsURL(), "/metrics"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 100<<10))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 100 KiB header: HTTP %d, want 431", resp.StatusCode)
	}
}

// scrapeKeepAlive dials addr from the loopback address from, scrapes
// /metrics once and leaves the connection open (idle between requests,
// as a keep-alive scraper's), returning it and the answer's status.
func scrapeKeepAlive(t *testing.T, from, addr string) (net.Conn, int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatalf("a scrape from %s: %v", from, err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a scrape from %s: %v", from, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c, resp.StatusCode
}

// metricsHostPort is p's metrics server's host:port.
func metricsHostPort(p *trace.Provider) string {
	return strings.TrimPrefix(strings.TrimSuffix(p.MetricsURL(), "/metrics"), "http://")
}

// scrapeFrom scrapes p's /metrics on a new connection from the loopback
// address from, within 10 s, and returns the answer's status.
func scrapeFrom(t *testing.T, p *trace.Provider, from string) int {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(p.MetricsURL())
	if err != nil {
		t.Fatalf("a scrape from %s: %v", from, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The per-address cap is RPC's (128; it was 16): of 200 keep-alive
// scrapers from one address, 128 are served and stay open, the other 72
// are answered 429, and a scrape from another address is served.
// Keep-alive connections (idle 30 s) rather than half-sent headers (cut
// after 5 s), so that a slow machine cannot blur the counts.
func TestMetricsConnectionCapPerAddr(t *testing.T) {
	p := setupMetrics(t, trace.Config{MetricsAddr: "127.0.0.1:0"})
	const attack = 200
	perAddr := httpguard.DefaultMaxConnsPerAddr
	served, refused := 0, 0
	for range attack {
		switch _, code := scrapeKeepAlive(t, "127.0.0.3", metricsHostPort(p)); code {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Fatalf("a scrape from the crowd's address: HTTP %d", code)
		}
	}
	st := trace.MetricsConns(p)
	if served != perAddr || refused != attack-perAddr || st.Open != perAddr || st.Refused != uint64(attack-perAddr) {
		t.Fatalf("%d scrapers from one address: %d served, %d refused, %+v; want %d served and open, %d refused (RPC's per-IP cap)",
			attack, served, refused, st, perAddr, attack-perAddr)
	}
	if code := scrapeFrom(t, p, "127.0.0.4"); code != http.StatusOK {
		t.Fatalf("a scrape from another address beside %d from one: HTTP %d", attack, code)
	}
}

// The total cap is RPC's (512; it was 64): 640 keep-alive scrapers from
// five addresses (128 each, within the per-address cap) leave 512 open,
// the 128 longest idle reclaimed, and a new scraper takes the place of
// one more.
func TestMetricsConnectionCap(t *testing.T) {
	p := setupMetrics(t, trace.Config{MetricsAddr: "127.0.0.1:0"})
	maxConns, perAddr := httpguard.DefaultMaxConns, httpguard.DefaultMaxConnsPerAddr
	const addrs = 5
	for i := range addrs * perAddr {
		from := fmt.Sprintf("127.0.0.%d", 10+i%addrs)
		if _, code := scrapeKeepAlive(t, from, metricsHostPort(p)); code != http.StatusOK {
			t.Fatalf("scraper %d from %s: HTTP %d", i, from, code)
		}
	}
	want := uint64(addrs*perAddr - maxConns)
	if st := trace.MetricsConns(p); st.Open != maxConns || st.Reclaimed != want || st.Refused != 0 {
		t.Fatalf("after %d keep-alive scrapers: %+v, want %d open (RPC's cap) and %d reclaimed", addrs*perAddr, st, maxConns, want)
	}
	if code := scrapeFrom(t, p, "127.0.0.4"); code != http.StatusOK {
		t.Fatalf("a new scraper at the cap: HTTP %d", code)
	}
	if st := trace.MetricsConns(p); st.Reclaimed != want+1 {
		t.Fatalf("%+v: the new scraper should have reclaimed one idle connection", st)
	}
}

// heapLive returns the Go heap's live bytes after a full GC.
func heapLive() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// headerFloodHeapBound is what issue 26's header flood on the metrics
// server (TestMetricsHeaderFloodMemory) may add to the Go heap: the
// connection cap's 512 connections, each holding at most a header's
// 32 KiB and Go's 4 KiB beyond it (httpguard), are 18 MiB; the rest is
// room for the connections' own state and the test's clients. Before,
// with Go's 1 MiB header limit and no cap, 2,000 connections took RSS
// to 2,278 MB.
const headerFloodHeapBound = 48 << 20

// 2,000 connections from 16 addresses each send a 1 MB header, all at
// once, and hold their connections: the Go heap, live after a GC, grows
// by at most headerFloodHeapBound while they are open, and a scrape from
// another address is served.
func TestMetricsHeaderFloodMemory(t *testing.T) {
	p := setupMetrics(t, trace.Config{MetricsAddr: "127.0.0.1:0"})
	const conns, addrs = 2000, 16
	header := []byte("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20))
	base := heapLive()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	peak := base
	for i := range conns {
		if i%200 == 199 {
			peak = max(peak, heapLive())
		}
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("127.0.1.%d", 1+i%addrs))}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", metricsHostPort(p))
		if err != nil {
			continue // refused at the cap, or the backlog full: the bound at work
		}
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			c.Write(header) // the one header, shared: the clients hold little
		}()
	}
	// The peak, sampled as the flood grows and once every connection has
	// written what the server (and the kernel's buffers) would take.
	for range 3 {
		time.Sleep(200 * time.Millisecond)
		peak = max(peak, heapLive())
	}
	grew := int64(peak) - int64(base)
	if code := scrapeFrom(t, p, "127.0.0.9"); code != http.StatusOK {
		t.Fatalf("a scrape beside the flood: HTTP %d", code)
	}
	mu.Lock()
	n := len(open)
	mu.Unlock()
	t.Logf("%d of %d connections opened; Go heap live %.1f MB before, %.1f MB at the peak (+%.1f MB); %+v",
		n, conns, float64(base)/1e6, float64(peak)/1e6, float64(grew)/1e6, trace.MetricsConns(p))
	if grew > headerFloodHeapBound {
		t.Fatalf("the Go heap grew by %.1f MB under the header flood, more than %d MiB", float64(grew)/1e6, headerFloodHeapBound>>20)
	}
}
