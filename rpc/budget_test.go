package rpc

import (
	"bytes"
	b64 "encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBudget(100, func() time.Time { return now })
	a, other := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	if _, ok := b.take(a, 60); !ok {
		t.Fatal("60 of a full 100 refused")
	}
	wait, ok := b.take(a, 60)
	if ok || wait != 200*time.Millisecond {
		t.Fatalf("60 of the 40 left: ok %v, wait %v; want refused, 200ms", ok, wait)
	}
	if _, ok := b.take(other, 100); !ok {
		t.Fatal("another address's full budget refused")
	}
	now = now.Add(200 * time.Millisecond)
	if _, ok := b.take(a, 60); !ok {
		t.Fatal("60 after 200ms refilled 20 to 60: refused")
	}
	if _, ok := b.take(a, 1); ok {
		t.Fatal("1 of an empty bucket allowed")
	}
	now = now.Add(time.Hour)
	if _, ok := b.take(a, 1_000); !ok {
		t.Fatal("a charge above the bucket's size, on a full bucket: refused (it is cut to the size)")
	}
	// Forgetting: full buckets are dropped once maxBuckets are tracked.
	for i := 0; len(b.buckets) < maxBuckets; i++ {
		b.take(netip.AddrFrom4([4]byte{11, 0, byte(i >> 8), byte(i)}), 0)
	}
	now = now.Add(time.Second)
	b.take(netip.MustParseAddr("12.0.0.1"), 0)
	if n := len(b.buckets); n != 1 {
		t.Fatalf("%d buckets after every full one should have been forgotten, want 1", n)
	}
}

// countingVerifier counts the signatures it checks.
type countingVerifier struct {
	Verifier
	n atomic.Int64
}

func (v *countingVerifier) Verify(pubkey *[32]byte, msg []byte, sig *[64]byte) bool {
	v.n.Add(1)
	return v.Verifier.Verify(pubkey, msg, sig)
}

// oneSigTx is a legacy transaction with one (bad) signature, its fee
// payer and a program, and no instruction: enough to parse and check.
func oneSigTx(i int) string {
	var b bytes.Buffer
	b.WriteByte(1)
	sig := make([]byte, 64)
	sig[0] = byte(i)
	b.Write(sig)
	b.Write([]byte{1, 0, 1, 2})
	b.Write(bytes.Repeat([]byte{7}, 32))
	b.Write(make([]byte, 32))
	var hash [32]byte
	hash[0] = 10 // slot 10's blockhash in fakeLedger
	b.Write(hash[:])
	b.WriteByte(0)
	return b64.StdEncoding.EncodeToString(b.Bytes())
}

// postFrom posts body from the loopback address from and returns the
// HTTP status and body.
func postFrom(t *testing.T, from, url, body string) (int, []byte) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// The attack of issue 26: batches of simulateTransaction with sigVerify
// from one address had the node check signatures without limit. Now one
// address gets ExpensivePerSec units a second (here 100, on a clock
// that stands still: 100 in all), each request past it is refused with
// -32005 "rate limited", and another address is served.
func TestExpensiveBudget(t *testing.T) {
	v := &countingVerifier{Verifier: testVerifier(t)}
	frozen := time.Now()
	budgetClock = func() time.Time { return frozen } // no refill
	defer func() { budgetClock = nil }()
	s := startFake(t, &fakeLedger{last: 10}, Config{ExpensivePerSec: 100, Verifier: v})
	calls := make([]string, 100)
	for i := range calls {
		calls[i] = rpcCall(i, "simulateTransaction", fmt.Sprintf(`[%q,{"encoding":"base64","sigVerify":true}]`, oneSigTx(i)))
	}
	attack := batch(calls...)
	limited := 0
	for range 3 {
		code, body := postFrom(t, "127.0.0.8", s.URL(), attack)
		if code != http.StatusOK {
			t.Fatalf("a batch: HTTP %d %s", code, body)
		}
		var out []reply
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		for _, r := range out {
			if r.Error != nil && r.Error.Code == codeRateLimited && strings.HasPrefix(r.Error.Message, rateLimited) {
				limited++
			}
		}
	}
	// 300 simulations of 2 units each (a signature and a simulation)
	// were asked; the budget holds 100.
	if limited != 250 {
		t.Fatalf("%d requests of 300 rate limited, want 250", limited)
	}
	if n := v.n.Load(); n != 50 {
		t.Fatalf("%d signatures checked for one address, want 50: the budget's 100 units, 2 a simulation", n)
	}
	// Another address has its own budget.
	code, body := postFrom(t, "127.0.0.9", s.URL(), calls[0])
	if code != http.StatusOK || bytes.Contains(body, []byte(rateLimited)) {
		t.Fatalf("another address: HTTP %d %s", code, body)
	}
	// A lone request refused for its budget is HTTP 429.
	code, body = postFrom(t, "127.0.0.8", s.URL(), calls[1])
	if code != http.StatusTooManyRequests || !bytes.Contains(body, []byte(rateLimited)) {
		t.Fatalf("a lone request past the budget: HTTP %d %s, want 429 and %q", code, body, rateLimited)
	}
}
