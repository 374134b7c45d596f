package rpc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// dialFrom connects to addr from the loopback address from (Linux routes
// all of 127.0.0.0/8 to lo, so distinct ones model distinct clients).
func dialFrom(from, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	return d.Dial("tcp", addr)
}

// keepAlive sends one getSlot on c and reads the answer, leaving c open
// and idle between requests, as a keep-alive client does.
func keepAlive(c net.Conn) error {
	body := rpcCall(1, "getSlot", "[]")
	if _, err := fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// freshClient posts getSlot on a new connection (no keep-alive pool)
// from the loopback address from, within limit.
func freshClient(from, url string, limit time.Duration) error {
	tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(rpcCall(1, "getSlot", "[]")))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// The attack of issue 26: 520 keep-alive connections, idle between
// requests, held more than the 512-connection cap for their 30 s idle
// timeout, and every new client timed out. Now a new client takes the
// place of the longest idle one, at once. The idle connections come from
// five addresses, within the per-IP limit.
func TestIdleConnectionsReclaimed(t *testing.T) {
	s := startFake(t, &fakeLedger{last: 10}, Config{})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	const idle = 520
	for i := range idle {
		from := fmt.Sprintf("127.0.0.%d", 10+i%5)
		c, err := dialFrom(from, s.Addr())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if err := keepAlive(c); err != nil {
			t.Fatalf("connection %d from %s: %v", i, from, err)
		}
	}
	st := s.ln.Stats()
	if st.Open != DefaultMaxConns || st.Reclaimed != idle-DefaultMaxConns {
		t.Fatalf("after %d idle connections: %+v, want %d open and %d reclaimed", idle, st, DefaultMaxConns, idle-DefaultMaxConns)
	}
	// The figure: a new client served within 1 s (an honest
	// client's patience; the reclaim itself takes microseconds).
	start := time.Now()
	if err := freshClient("127.0.0.2", s.URL(), time.Second); err != nil {
		t.Fatalf("a new client behind %d idle connections: %v", idle, err)
	}
	t.Logf("a new client behind %d idle connections served in %v", idle, time.Since(start))
	if st := s.ln.Stats(); st.Reclaimed != idle-DefaultMaxConns+1 {
		t.Fatalf("%+v: the new client should have reclaimed one idle connection", st)
	}
}

// The attack of issue 26: a slowloris of 5,000 connections from one
// address, each sending its request header a byte at a time. It holds at
// most the per-IP limit of connections (the rest are refused with HTTP
// 429 at once), and a client from another address is served.
func TestSlowlorisFromOneAddress(t *testing.T) {
	s := startFake(t, &fakeLedger{last: 10}, Config{ReadHeaderTimeout: time.Minute})
	const attack = 5000
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				c, err := dialFrom("127.0.0.3", s.Addr())
				if err != nil {
					continue // a refused or dropped SYN: the attacker's loss
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Slow: a") // and never more
			}
		}()
	}
	for i := range attack {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	// Every connection was either taken (within the cap) or refused.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := s.ln.Stats()
		if st.Open <= DefaultMaxConnsPerIP && uint64(st.Open)+st.Refused+st.Reclaimed >= attack {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d connections from one address: %+v, want at most %d open and the rest refused", attack, st, DefaultMaxConnsPerIP)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := freshClient("127.0.0.4", s.URL(), 5*time.Second); err != nil {
		t.Fatalf("a client from another address during a %d-connection slowloris: %v", attack, err)
	}
	if st := s.ln.Stats(); st.Open > DefaultMaxConnsPerIP+1 {
		t.Fatalf("%+v: more than the per-IP limit from the attacker", st)
	}
}

// A connection past the per-IP limit is answered 429 and closed; one
// from another address is served.
func TestPerIPLimit(t *testing.T) {
	s := startFake(t, &fakeLedger{last: 10}, Config{MaxConnsPerIP: 2, ReadHeaderTimeout: time.Minute})
	for range 2 {
		c, err := dialFrom("127.0.0.5", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST / HTTP/1.1\r\n")
	}
	c, err := dialFrom("127.0.0.5", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := rpcCall(1, "getSlot", "[]")
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the third connection from one address: %v, want HTTP 429", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the third connection from one address: HTTP %d, want 429", resp.StatusCode)
	}
	if err := freshClient("127.0.0.6", s.URL(), 10*time.Second); err != nil {
		t.Fatalf("another address: %v", err)
	}
	if st := s.ln.Stats(); st.Refused != 1 {
		t.Fatalf("%+v, want 1 refused", st)
	}
}

// The attack of issue 26: a slow-body flood, in which 39 of 45 new-client
// probes timed out. 1,000 connections from one address each send a
// request's header and most of its body (Content-Length MaxBodyBytes, all
// but 1 KiB of it at once, the most memory a body may hold), then the
// rest a byte at a time, never finishing within the test (ReadTimeout is
// a minute here, so that nothing cuts them short). The address holds at
// most the per-IP limit of connections, the rest refused at once; ten
// clients from another address are each served within 1 s; and the heap
// grows by no more than the limits allow the connections held.
func TestSlowBodyFromOneAddress(t *testing.T) {
	s := startFake(t, &fakeLedger{last: 10}, Config{ReadTimeout: time.Minute})
	const (
		attack = 1000
		tail   = 1 << 10 // of each body, sent a byte at a time
	)
	maxBody := s.cfg.MaxBodyBytes
	// Bounds the heap growth: what the limits let a connection hold (its
	// header, the 4 KiB Go reads past MaxHeaderBytes, the body read into
	// a buffer that may be twice its size while it grows, and its bufio
	// buffers), per connection held, and 2 KiB for each of the
	// attacker's own sockets, which live in this process too.
	perConn := uint64(s.cfg.MaxHeaderBytes) + 4<<10 + 2*uint64(maxBody) + 8<<10
	head := fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", maxBody)
	bulk := append([]byte(head), bytes.Repeat([]byte(" "), int(maxBody)-tail)...)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	var mu sync.Mutex
	var conns []net.Conn
	stop := make(chan struct{})
	dripped := make(chan struct{})
	defer func() {
		close(stop)
		<-dripped
		for _, c := range conns {
			c.Close()
		}
	}()
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				c, err := dialFrom("127.0.0.3", s.Addr())
				if err != nil {
					continue // a refused or dropped SYN: the attacker's loss
				}
				c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				c.Write(bulk) // a refused connection may fail here: the attacker's loss
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	for i := range attack {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	// The bodies' tails, a byte per connection every 50 ms.
	go func() {
		defer close(dripped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			mu.Lock()
			for _, c := range conns {
				c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
				c.Write([]byte{' '})
			}
			mu.Unlock()
		}
	}()

	// Every connection was either taken (within the cap) or refused.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := s.ln.Stats()
		if st.Open <= DefaultMaxConnsPerIP && uint64(st.Open)+st.Refused+st.Reclaimed >= attack {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d slow bodies from one address: %+v, want at most %d open and the rest refused", attack, st, DefaultMaxConnsPerIP)
		}
		time.Sleep(10 * time.Millisecond)
	}
	held := s.ln.Stats().Open
	if held == 0 {
		t.Fatal("the attack holds no connection: it tests nothing")
	}

	const probes = 10
	var slowest time.Duration
	for i := range probes {
		start := time.Now()
		if err := freshClient("127.0.0.4", s.URL(), time.Second); err != nil {
			t.Fatalf("probe %d of %d from another address during a %d-connection slow-body flood: %v", i+1, probes, attack, err)
		}
		slowest = max(slowest, time.Since(start))
	}

	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	grew := int64(during.HeapAlloc) - int64(before.HeapAlloc)
	bound := uint64(held)*perConn + attack*2<<10
	t.Logf("slow-body flood: %d of %d connections held, %+v; %d of %d probes served, the slowest in %v; heap grew %.1f MiB (bound %.1f MiB)",
		held, attack, s.ln.Stats(), probes, probes, slowest, float64(grew)/(1<<20), float64(bound)/(1<<20))
	if grew > int64(bound) {
		t.Fatalf("the heap grew %d bytes under a slow-body flood holding %d connections, more than the limits allow (%d)", grew, held, bound)
	}
	if st := s.ln.Stats(); st.Open > DefaultMaxConnsPerIP+1 {
		t.Fatalf("%+v: more than the per-IP limit from the attacker", st)
	}
}
