package trace_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

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

// Connections are capped, 16 from one address: 200 connections that
// send half a header hold at most 16, and a scrape from another address
// is served.
func TestMetricsConnectionCap(t *testing.T) {
	p := setupMetrics(t, trace.Config{MetricsAddr: "127.0.0.1:0"})
	addr := strings.TrimPrefix(strings.TrimSuffix(p.MetricsURL(), "/metrics"), "http://")
	const attack = 200
	for range attack {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			continue
		}
		defer c.Close()
		io.WriteString(c, "GET /metrics HTTP/1.1\r\nX-Slow: a")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := trace.MetricsConns(p)
		if st.Open <= 16 && uint64(st.Open)+st.Refused+st.Reclaimed >= attack {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d connections from one address: %+v, want at most 16 open and the rest refused", attack, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.4")}}).DialContext}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(p.MetricsURL())
	if err != nil {
		t.Fatalf("a scrape from another address: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a scrape from another address: HTTP %d", resp.StatusCode)
	}
}
