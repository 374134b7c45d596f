package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
)

// fakeLedger is a ledger of last slots with no transactions and no
// accounts, whose every read is counted, and counted again as late if it
// comes after the test marked it closed.
type fakeLedger struct {
	last    uint64
	lag     uint64 // the durable slot is last-lag
	err     error  // Err's answer: a failed ledger
	closed  atomic.Bool
	late    atomic.Int64  // reads after closed was set
	history atomic.Uint64 // slots StatusesOf was asked to read
	// working, when not nil, receives (without blocking) on each
	// StatusesOf.
	working chan struct{}
	// entered and release, when not nil, hold CommittedAccount: it sends
	// on entered, then waits for release; returned tells it got past.
	entered, release chan struct{}
	returned         atomic.Bool
}

func (f *fakeLedger) read() {
	if f.closed.Load() {
		f.late.Add(1)
	}
}

func (f *fakeLedger) OnCommit(func(ledger.SlotRecord))                     {}
func (f *fakeLedger) TransactionCount() (count, through uint64, err error) { return 0, f.last, nil }
func (f *fakeLedger) CommittedSlot() uint64                                { return f.last }
func (f *fakeLedger) VisibleSlot() uint64                                  { return f.last }
func (f *fakeLedger) DurableSlot() uint64                                  { return f.last - f.lag }
func (f *fakeLedger) Err() error                                           { return f.err }

func (f *fakeLedger) SlotRecordOf(slot uint64) (ledger.SlotRecord, bool, error) {
	f.read()
	r := ledger.SlotRecord{Slot: slot}
	binary.LittleEndian.PutUint64(r.Blockhash[:], slot)
	return r, true, nil
}

func (f *fakeLedger) SlotStatuses(slot uint64) ([]ledger.SigStatus, error) {
	f.read()
	return nil, nil
}

func (f *fakeLedger) StatusesOf(sigs [][64]byte, from, through uint64) (map[[64]byte]ledger.Status, error) {
	f.read()
	f.history.Add(from - through + 1)
	if f.working != nil {
		select {
		case f.working <- struct{}{}:
		default:
		}
	}
	return map[[64]byte]ledger.Status{}, nil
}

func (f *fakeLedger) CommittedAccount(key banking.Pubkey) (bank.Account, bool, error) {
	f.read()
	if f.entered != nil {
		f.entered <- struct{}{}
		<-f.release
		f.returned.Store(true)
	}
	return bank.Account{Lamports: 7}, true, nil
}

// startFake serves l with cfg (its Addr, TPU, Bank and Verifier filled
// in).
func startFake(t *testing.T, l *fakeLedger, cfg Config) *Server {
	t.Helper()
	cfg.Addr, cfg.TPU, cfg.Bank, cfg.Seed = "127.0.0.1:0", netip.MustParseAddrPort("127.0.0.1:9"), l, "x"
	if cfg.Verifier == nil {
		cfg.Verifier = testVerifier(t)
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Bounded, so that a handler that never stops fails the test
		// rather than hanging it.
		closed := make(chan struct{})
		go func() { s.Close(context.Background()); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Error("Close did not return within 10s")
		}
	})
	return s
}

// post sends body and returns the HTTP status and the response body.
func post(t *testing.T, ctx context.Context, url, body string) (int, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

type reply struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

func sigString(i int) string {
	var sig [64]byte
	binary.LittleEndian.PutUint64(sig[:], uint64(i)+1)
	return base58.Encode(sig[:])
}

func sigList(n int) string {
	q := make([]string, n)
	for i := range q {
		q[i] = `"` + sigString(i) + `"`
	}
	return "[" + strings.Join(q, ",") + "]"
}

func keyList(n int) string {
	q := make([]string, n)
	for i := range q {
		var k banking.Pubkey
		k[0] = byte(i)
		q[i] = `"` + base58.Encode(k[:]) + `"`
	}
	return "[" + strings.Join(q, ",") + "]"
}

func rpcCall(id int, method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
}

func batch(calls ...string) string { return "[" + strings.Join(calls, ",") + "]" }

// Each cap on what one request may cost gives a JSON-RPC error naming
// it; a request within every cap is served.
func TestRequestCaps(t *testing.T) {
	s := startFake(t, &fakeLedger{last: 200}, Config{MaxBatch: 3, MaxItems: 300, MaxDepth: 6})
	statuses := func(id, n int) string { return rpcCall(id, "getSignatureStatuses", "["+sigList(n)+"]") }
	deep := strings.Repeat("[", 7) + strings.Repeat("]", 7)
	for _, c := range []struct {
		name, body string
		// codes: the error code of each response, 0 for a result; one
		// entry for a single response.
		codes []int
		msg   string // in the first error's message
	}{
		{"batch at the cap", batch(rpcCall(1, "getSlot", "[]"), rpcCall(2, "getSlot", "[]"), rpcCall(3, "getSlot", "[]")), []int{0, 0, 0}, ""},
		{"batch over the cap", batch(rpcCall(1, "getSlot", "[]"), rpcCall(2, "getSlot", "[]"), rpcCall(3, "getSlot", "[]"), rpcCall(4, "getSlot", "[]")), []int{-32600}, "batch of 4 requests, more than the 3 allowed"},
		{"nesting at the cap", rpcCall(1, "getSlot", `[{"commitment":"finalized","x":[[[]]]}]`), []int{0}, ""},
		{"nesting over the cap", rpcCall(1, "getSlot", `[{"x":`+deep+`}]`), []int{-32600}, "nested more than 6 levels deep"},
		{"25,000 deep", strings.Repeat("[", 25_000) + strings.Repeat("]", 25_000), []int{-32600}, "nested more than 6 levels deep"},
		{"signatures over the per-request cap", statuses(1, 257), []int{-32602}, "max 256"},
		{"accounts over the per-request cap", rpcCall(1, "getMultipleAccounts", "["+keyList(101)+"]"), []int{-32602}, "max 100"},
		{"items within the batch's cap", batch(statuses(1, 200), statuses(2, 100)), []int{0, 0}, ""},
		{"items over the batch's cap", batch(statuses(1, 200), statuses(2, 101), rpcCall(3, "getMultipleAccounts", "["+keyList(100)+"]")), []int{0, -32602, 0}, "would pass the 300 one HTTP request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body, err := post(t, context.Background(), s.URL(), c.body)
			if err != nil || code != http.StatusOK {
				t.Fatalf("HTTP %d %v", code, err)
			}
			var got []reply
			if !bytes.HasPrefix(body, []byte("[")) {
				var r reply
				err = json.Unmarshal(body, &r)
				got = []reply{r}
			} else {
				err = json.Unmarshal(body, &got)
			}
			if err != nil || len(got) != len(c.codes) {
				t.Fatalf("%d responses, want %d: %s %v", len(got), len(c.codes), body, err)
			}
			msg := ""
			for i, r := range got {
				code := 0
				if r.Error != nil {
					code = r.Error.Code
					if msg == "" {
						msg = r.Error.Message
					}
				}
				if code != c.codes[i] {
					t.Errorf("response %d: code %d, want %d: %s", i, code, c.codes[i], body)
				}
			}
			if !strings.Contains(msg, c.msg) {
				t.Errorf("message %q, want it to say %q", msg, c.msg)
			}
		})
	}
}

func TestNestedDeeper(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want bool
	}{
		{`{}`, 1, false},
		{`{"a":[]}`, 1, true},
		{`{"a":[]}`, 2, false},
		{`["[[[[", "{{{{"]`, 1, false},
		{`["\"[[[["]`, 1, false},
		{`["\\", [[]]]`, 2, true},
		{`[[[`, 2, true}, // not JSON: the decoder refuses it if not this
		{``, 0, false},
	} {
		if got := nestedDeeper([]byte(c.in), c.max); got != c.want {
			t.Errorf("nestedDeeper(%s, %d) = %v, want %v", c.in, c.max, got, c.want)
		}
	}
}

func TestConnCapBelowDescriptorLimit(t *testing.T) {
	for _, c := range []struct {
		want  int
		limit uint64
		cap   int
	}{
		{512, 0, 512}, // limit unknown
		{512, 1 << 20, 512},
		{512, 1024, 512},
		{512, 600, 344},
		{512, 256, 1},
		{512, 10, 1},
	} {
		if got := connCap(c.want, c.limit); got != c.cap {
			t.Errorf("connCap(%d, %d) = %d, want %d", c.want, c.limit, got, c.cap)
		}
	}
	if fdLimit() == 0 && (runtime.GOOS == "linux" || runtime.GOOS == "darwin") {
		t.Error("fdLimit: the descriptor limit not read")
	}
}

// A header over MaxHeaderBytes gets 431 and is not kept.
func TestHeaderTooLarge(t *testing.T) {
	s := startFake(t, &fakeLedger{last: 10}, Config{MaxHeaderBytes: 1 << 10})
	req, _ := http.NewRequest(http.MethodPost, s.URL(), strings.NewReader(rpcCall(1, "getSlot", "[]")))
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("HTTP %d, want 431", resp.StatusCode)
	}
	// One within the limit is served.
	if code, _, err := post(t, context.Background(), s.URL(), rpcCall(1, "getSlot", "[]")); err != nil || code != http.StatusOK {
		t.Fatalf("a small header: HTTP %d %v", code, err)
	}
}

// A connection that sends its header slowly is closed by the server at
// ReadHeaderTimeout.
func TestSlowlorisClosed(t *testing.T) {
	s := startFake(t, &fakeLedger{last: 10}, Config{ReadHeaderTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Slow: a"); err != nil {
		t.Fatal(err)
	}
	// The server's close is what ends this read; the deadline only bounds
	// a failing test.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server did not close a connection stuck in its header within 10s")
	}
}

// Beyond MaxConns, with every connection busy in a request, a connection
// is not accepted until one closes; then it is served.
func TestConnCap(t *testing.T) {
	full := make(chan struct{}, 1)
	atCap = func() {
		select {
		case full <- struct{}{}:
		default:
		}
	}
	defer func() { atCap = nil }()
	l := &fakeLedger{last: 10, entered: make(chan struct{}, 2), release: make(chan struct{})}
	s := startFake(t, l, Config{MaxConns: 2})
	var held []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		body := rpcCall(i, "getBalance", `["11111111111111111111111111111111"]`)
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		held = append(held, c)
	}
	for range 2 {
		select {
		case <-l.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("two getBalance requests did not reach the ledger within 10s")
		}
	}
	third, err := net.Dial("tcp", s.Addr()) // waits: no connection is idle
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	select {
	case <-full:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not reach its cap of 2 within 10s")
	}
	body := rpcCall(1, "getSlot", "[]")
	fmt.Fprintf(third, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if st := s.ln.Stats(); st.Open != 2 || st.Reclaimed != 0 {
		t.Fatalf("%+v, want 2 open (the cap) and none reclaimed: both are busy", st)
	}
	held[0].Close()
	close(l.release)
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("the third connection, once one closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	if n := s.ln.Stats().Open; n > 2 {
		t.Fatalf("%d connections open, cap 2", n)
	}
}

// idleSignal sets the left hook to signal each time no handler runs.
func idleSignal(t *testing.T) chan struct{} {
	idle := make(chan struct{}, 1)
	left = func(running int) {
		if running == 0 {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
	}
	t.Cleanup(func() { left = nil })
	return idle
}

// History searches whose clients go away stop: the ledger is read no
// more once their handlers return, long before the searches would have
// ended. Meanwhile other requests are served.
func TestHistorySearchStopsWhenClientsLeave(t *testing.T) {
	idle := idleSignal(t)
	l := &fakeLedger{last: 1 << 40, working: make(chan struct{}, 1)}
	const history = 1 << 50 // a search reads 2^40 slots: hours
	// A budget for expensive work that never runs out: this is about
	// cancellation, not the budget.
	s := startFake(t, l, Config{HistorySlots: history, MaxSearches: 2, ExpensivePerSec: 1 << 40})
	search := rpcCall(1, "getSignatureStatuses", `[["`+sigString(1)+`"],{"searchTransactionHistory":true}]`)
	ctx, cancel := context.WithCancel(context.Background())
	const clients = 20
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := post(t, ctx, s.URL(), search); !errors.Is(err, context.Canceled) {
				t.Errorf("a search returned before its client left: %v", err)
			}
		}()
	}
	select {
	case <-l.working:
	case <-time.After(10 * time.Second):
		t.Fatal("no history search started within 10s")
	}
	// Served while the searches run: a read, and a status without history.
	for _, body := range []string{
		rpcCall(2, "getBalance", `["11111111111111111111111111111111"]`),
		rpcCall(3, "getSignatureStatuses", `[["`+sigString(1)+`"]]`),
	} {
		code, b, err := post(t, context.Background(), s.URL(), body)
		var r reply
		if err != nil || code != http.StatusOK || json.Unmarshal(b, &r) != nil || r.Error != nil {
			t.Fatalf("a request beside the searches: HTTP %d %s %v", code, b, err)
		}
	}
	cancel()
	wg.Wait()
	// Every handler returns: the searches running saw their context end,
	// the others left the queue for a turn.
	timeout := time.After(10 * time.Second)
	for {
		s.hmu.Lock()
		running := s.running
		s.hmu.Unlock()
		if running == 0 {
			break
		}
		select {
		case <-idle:
		case <-timeout:
			t.Fatalf("%d handlers still running 10s after their clients left (%d slots searched)", running, s.searched.Load())
		}
	}
	done := l.history.Load()
	if done >= history || s.searched.Load() != done {
		t.Fatalf("%d slots searched (the server counted %d): want fewer than one search's %d", done, s.searched.Load(), uint64(history))
	}
	t.Logf("%d slots searched by %d abandoned searches", done, clients)
}

// Without a client leaving, one HTTP request's history search stops at
// HistorySlots, all the requests of a batch together.
func TestHistorySearchBudget(t *testing.T) {
	l := &fakeLedger{last: 1 << 20}
	s := startFake(t, l, Config{HistorySlots: 100})
	search := func(id int) string {
		return rpcCall(id, "getSignatureStatuses", `[["`+sigString(1)+`"],{"searchTransactionHistory":true}]`)
	}
	code, b, err := post(t, context.Background(), s.URL(), batch(search(1), search(2), search(3)))
	var got []reply
	if err != nil || code != http.StatusOK || json.Unmarshal(b, &got) != nil || len(got) != 3 {
		t.Fatalf("HTTP %d %s %v", code, b, err)
	}
	for _, r := range got {
		if r.Error != nil || !bytes.Contains(r.Result, []byte(`"value":[null]`)) {
			t.Errorf("response %d: %s", r.ID, b)
		}
	}
	if n := l.history.Load(); n != 100 {
		t.Fatalf("%d slots searched, want the budget's 100", n)
	}
}

// Close cancels a history search in flight and returns only once its
// handler has: the ledger is not read after Close.
func TestCloseCancelsSearchBeforeLedgerCloses(t *testing.T) {
	l := &fakeLedger{last: 1 << 40, working: make(chan struct{}, 1)}
	s := startFake(t, l, Config{HistorySlots: 1 << 50, ExpensivePerSec: 1 << 40})
	answered := make(chan []byte, 1)
	go func() {
		_, b, _ := post(t, context.Background(), s.URL(), rpcCall(1, "getSignatureStatuses", `[["`+sigString(1)+`"],{"searchTransactionHistory":true}]`))
		answered <- b
	}()
	select {
	case <-l.working:
	case <-time.After(10 * time.Second):
		t.Fatal("the search did not start within 10s")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Close did not return within 10s (%d slots searched)", l.history.Load())
	}
	l.closed.Store(true) // what closing the ledger would do
	s.hmu.Lock()
	running := s.running
	s.hmu.Unlock()
	if running != 0 {
		t.Fatalf("Close returned with %d handlers running", running)
	}
	if b := <-answered; len(b) > 0 && !bytes.Contains(b, []byte("request cancelled")) {
		t.Errorf("the cancelled search answered %s", b)
	}
	if n := l.late.Load(); n != 0 {
		t.Fatalf("%d ledger reads after Close returned", n)
	}
}

// A handler in a ledger read when Close begins finishes it before Close
// returns, even when Close's context has ended; given the time, its
// answer is written too.
func TestCloseDrainsHandlerInFlight(t *testing.T) {
	for _, expired := range []bool{false, true} {
		t.Run(fmt.Sprintf("expired=%v", expired), func(t *testing.T) {
			l := &fakeLedger{last: 10, entered: make(chan struct{}), release: make(chan struct{})}
			s := startFake(t, l, Config{})
			answered := make(chan []byte, 1)
			go func() {
				_, b, _ := post(t, context.Background(), s.URL(), rpcCall(1, "getBalance", `["11111111111111111111111111111111"]`))
				answered <- b
			}()
			<-l.entered
			ctx, cancel := context.WithCancel(context.Background())
			if expired {
				cancel()
			}
			defer cancel()
			closed := make(chan bool, 1)
			go func() {
				s.Close(ctx)
				closed <- l.returned.Load()
			}()
			<-s.closed // Close has begun
			close(l.release)
			if !<-closed {
				t.Fatal("Close returned while a handler was still in the ledger")
			}
			if b := <-answered; !expired && !bytes.Contains(b, []byte(`"value":7`)) {
				t.Fatalf("the drained handler answered %q", b)
			}
			// Later requests are refused.
			if _, _, err := post(t, context.Background(), s.URL(), rpcCall(1, "getSlot", "[]")); err == nil {
				t.Fatal("a request after Close was served")
			}
		})
	}
}

func TestAirdropLimit(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	a, b := banking.Pubkey{1}, banking.Pubkey{2}
	type step struct {
		at       time.Duration // after t0
		to       banking.Pubkey
		lamports uint64
		refused  string // the flag the refusal names; "" when allowed
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"per recipient", []step{{0, a, 60, ""}, {1, a, 40, ""}, {2, a, 1, "--rpc-airdrop-per-recipient"}, {3, b, 100, ""}}},
		{"one request over the per-recipient cap", []step{{0, a, 101, "--rpc-airdrop-per-recipient"}, {1, a, 100, ""}}},
		{"in all", []step{{0, a, 100, ""}, {1, b, 100, ""}, {2, banking.Pubkey{3}, 51, "--rpc-airdrop-lamports"}, {3, banking.Pubkey{3}, 50, ""}}},
		{"requests", []step{{0, a, 1, ""}, {1, a, 1, ""}, {2, b, 1, ""}, {3, b, 1, ""}, {4, banking.Pubkey{9}, 1, "--rpc-airdrop-requests"}}},
		{"a new window", []step{{0, a, 100, ""}, {time.Minute - 1, a, 1, "--rpc-airdrop-per-recipient"}, {time.Minute, a, 100, ""}}},
		{"the clock going back starts a window", []step{{time.Hour, a, 100, ""}, {0, a, 100, ""}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := airdropLimit{window: time.Minute, perRecipient: 100, lamports: 250, requests: 4}
			for i, st := range c.steps {
				err := l.take(t0.Add(st.at), st.to, st.lamports)
				switch {
				case st.refused == "" && err != nil:
					t.Fatalf("step %d refused: %v", i, err)
				case st.refused != "" && err == nil:
					t.Fatalf("step %d allowed, want refused by %s", i, st.refused)
				case st.refused != "" && (!strings.Contains(err.Error(), st.refused) || !strings.HasPrefix(err.Error(), errAirdropLimit)):
					t.Fatalf("step %d: %v, want it to start %q and name %s", i, err, errAirdropLimit, st.refused)
				}
			}
		})
	}
}

// Over its limit, requestAirdrop answers a JSON-RPC error and sends
// nothing.
func TestAirdropLimitOverRPC(t *testing.T) {
	s := startFake(t, &fakeLedger{last: 10}, Config{AirdropPerRecipient: 3_000_000_000, AirdropRequests: 3})
	to := base58.Encode(make([]byte, 32))
	other := base58.Encode(bytes.Repeat([]byte{1}, 32))
	for i, c := range []struct {
		to       string
		lamports uint64
		code     int
		msg      string
	}{
		{to, 2_000_000_000, 0, ""},
		{to, 1_000_000_001, -32603, "--rpc-airdrop-per-recipient"},
		{to, 1_000_000_000, 0, ""},
		{other, 1, 0, ""},
		{other, 1, -32603, "--rpc-airdrop-requests"},
	} {
		_, b, err := post(t, context.Background(), s.URL(), rpcCall(i, "requestAirdrop", fmt.Sprintf(`[%q,%d]`, c.to, c.lamports)))
		var r reply
		if err != nil || json.Unmarshal(b, &r) != nil {
			t.Fatalf("airdrop %d: %s %v", i, b, err)
		}
		switch {
		case c.code == 0 && r.Error != nil:
			t.Fatalf("airdrop %d refused: %s", i, b)
		case c.code != 0 && (r.Error == nil || r.Error.Code != c.code || !strings.Contains(r.Error.Message, c.msg)):
			t.Fatalf("airdrop %d: %s, want error %d naming %s", i, b, c.code, c.msg)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	v := testVerifier(t)
	if err := (Config{Verifier: v}).Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("no ledger: %v", err)
	}
	// The verifier has no default: the backend is resolved once, in cmd,
	// and RPC must accept exactly what the pipeline's sigverify does.
	if err := (Config{Bank: &fakeLedger{}}).Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Verifier") {
		t.Errorf("no verifier: %v", err)
	}
	if _, err := Start(Config{Addr: "127.0.0.1:0", Bank: &fakeLedger{last: 10}}); !errors.Is(err, ErrConfig) {
		t.Errorf("Start without a verifier: %v", err)
	}
	err := Config{Bank: &fakeLedger{}, Verifier: v, MaxConns: -1, ReadTimeout: -time.Second}.Validate()
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "MaxConns") || !strings.Contains(err.Error(), "ReadTimeout") {
		t.Errorf("negative limits: %v", err)
	}
	if err := (Config{Bank: &fakeLedger{}, Verifier: v}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// With NoFaucet (cmd/tpu sets it on a public address without
// --rpc-faucet), requestAirdrop answers Agave's answer with no faucet,
// -32600 Invalid request, and gives nothing.
func TestNoFaucet(t *testing.T) {
	s := startFake(t, &fakeLedger{last: 10}, Config{NoFaucet: true})
	_, b, err := post(t, context.Background(), s.URL(), rpcCall(1, "requestAirdrop", fmt.Sprintf(`[%q,%d]`, base58.Encode(make([]byte, 32)), 1_000_000_000)))
	var r reply
	if err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("%s %v", b, err)
	}
	if r.Error == nil || r.Error.Code != -32600 || r.Error.Message != "Invalid request" {
		t.Fatalf("requestAirdrop without a faucet: %s, want -32600 Invalid request", b)
	}
	if s.airdrops != 0 {
		t.Fatalf("%d airdrops given", s.airdrops)
	}
}
