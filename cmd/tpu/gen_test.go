package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/txview"
)

// TestGenAgainstRun runs tpu run --no-gen and tpu gen against it, as two
// commands would on one machine: gen's transfers are confirmed through
// RPC and every balance checks out to the lamport. The server picks its
// ports and prints them, and runs until the gen runs are done with it.
func TestGenAgainstRun(t *testing.T) {
	// gen checks balances after its final poll of the statuses. A valid
	// transaction still in the pipeline then could commit between the
	// two and break "moved by exactly". gen stops waiting at once when
	// every valid transaction is confirmed; when its settle (15 s, the
	// default) runs out first, it waits for the load's blockhash to
	// expire (TestAwaitExpiry) before the final poll. With 50 ms slots
	// that is 150 slots (7.5 s) after gen took it, before the settle runs
	// out, so this run never waits longer for it.
	c := startChild(t, "run", "--no-gen", "--duration", "0", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0",
		"--ledger", filepath.Join(t.TempDir(), "ledger"), "--seed", "gen-test", "--accounts", "40", "--slot-time", "50ms")
	tpuAddr := logged(t, c.await(t, 1, "msg=tpu "), "addr")
	url := logged(t, c.await(t, 1, "msg=json-rpc"), "url") // printed once it serves
	code, out, errOut := run(t, "", "gen", "--rpc", url, "--tpu", tpuAddr, "--seed", "gen-test", "--accounts", "20",
		"--rate", "1500", "--duration", "1s", "--invalid-fraction", "0.1", "--v0-fraction", "0.5")
	if code != 0 || !strings.Contains(out, "balances: all 20 accounts moved by exactly") {
		t.Fatalf("gen: exit %d\n%s\n%s", code, out, errOut)
	}
	// QUIC by default, to the port discovery names: the run's UDP port + 6
	// is not it (the run's UDP port is a free one, so its QUIC port is too).
	if !strings.Contains(errOut, "sending over QUIC to 127.0.0.1:") {
		t.Errorf("gen did not send over QUIC:\n%s", errOut)
	}
	for _, want := range []string{"load: open-loop, 1500 tx/s on a fixed schedule", "sender behind schedule by ", "latency scheduled send to seen confirmed"} {
		if !strings.Contains(out, want) {
			t.Errorf("gen's summary lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = run(t, "", "gen", "--rpc", url, "--tpu", tpuAddr, "--airdrop", "--accounts", "5",
		"--rate", "500", "--duration", "1s", "--batch-size", "1", "--send", "udp")
	if code != 0 || !strings.Contains(out, "balances: all 5 accounts") {
		t.Fatalf("gen --airdrop: exit %d\n%s\n%s", code, out, errOut)
	}
	c.await(t, 1, " received ") // the first live line: it takes signals
	out, err := c.interrupt(t)
	if err != nil || !strings.Contains(out, "accounting ok: true") {
		t.Fatalf("tpu run: %v\n%s\n%s", err, out, c.stderr())
	}
	// gen's identities, derived from the seed, are the ones run stakes.
	if !strings.Contains(out, "4 connections admitted") || strings.Count(out, "(staked 1000000000000 lamports)") != 4 {
		t.Errorf("the run's QUIC summary does not show gen's 4 staked identities:\n%s", out)
	}
}

// A rate of 0 or less is a usage error: gen is always open-loop. So is a
// v0 fraction with --airdrop: the genesis table holds genesis accounts.
func TestGenFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"--v0-fraction", "2"}, {"--v0-fraction", "0.5", "--airdrop"}} {
		if code, _, errOut := run(t, "", append([]string{"gen"}, args...)...); code != 2 || !strings.Contains(errOut, "--v0-fraction") {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, errOut)
		}
	}
	for _, rate := range []string{"0", "-100", "NaN"} {
		if code, _, errOut := run(t, "", "gen", "--rate", rate); code != 2 || !strings.Contains(errOut, "--rate") {
			t.Errorf("--rate %s: exit %d, want 2\n%s", rate, code, errOut)
		}
	}
}

// When the oldest transactions were dropped, the live polls must go round
// rather than stay on them, and the final poll must find every confirmed
// one, or the balance check would count their transfers as missing.
func TestConfirmationsBeyondTheWindow(t *testing.T) {
	const n, dropped, window = 300, 100, 25
	sigs := make([][64]byte, n)
	for i := range sigs {
		sigs[i][0], sigs[i][1] = byte(i), byte(i>>8)
	}
	asked := 0
	c := &confirmations{sigs: sigs, confirmed: make([]*sigStatus, n), query: func(q [][64]byte) ([]*sigStatus, error) {
		asked += len(q)
		out := make([]*sigStatus, len(q))
		for k, s := range q {
			if int(s[0])|int(s[1])<<8 >= dropped { // the first 100 never land
				out[k] = &sigStatus{Slot: 3}
			}
		}
		return out, nil
	}}
	for range 3 {
		if err := c.poll(n, window); err != nil {
			t.Fatal(err)
		}
	}
	if c.count != 0 || asked != 3*window {
		t.Fatalf("live polls: %d confirmed after asking about %d signatures; want 0 after %d", c.count, asked, 3*window)
	}
	for range 2 { // on to 75-99, then 100-124
		if err := c.poll(n, window); err != nil {
			t.Fatal(err)
		}
	}
	if c.count != window {
		t.Fatalf("live polls went round to %d confirmed, want %d", c.count, window)
	}
	if err := c.poll(n, 0); err != nil {
		t.Fatal(err)
	}
	if c.count != n-dropped {
		t.Fatalf("final poll: %d confirmed, want %d", c.count, n-dropped)
	}
	for i, st := range c.confirmed {
		if (st != nil) != (i >= dropped) {
			t.Fatalf("signature %d: confirmed %v", i, st != nil)
		}
	}
	// A short answer is an error, not a panic.
	c.query = func(q [][64]byte) ([]*sigStatus, error) { return nil, nil }
	if err := c.poll(n, 0); err == nil {
		t.Fatal("a short getSignatureStatuses answer was accepted")
	}
}

// rpcRequest is what a fake JSON-RPC server reads of a request.
type rpcRequest struct {
	ID     int64             `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

func readRPCRequest(r *http.Request) rpcRequest {
	var req rpcRequest
	json.NewDecoder(r.Body).Decode(&req)
	return req
}

// awaitExpiry returns once isBlockhashValid says false for its blockhash,
// and fails, naming the blockhash, when it stays valid past the limit.
func TestAwaitExpiry(t *testing.T) {
	h := [32]byte{7}
	var calls atomic.Int32
	validFor := int32(3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := readRPCRequest(r)
		var asked string
		if len(req.Params) > 0 {
			json.Unmarshal(req.Params[0], &asked)
		}
		if req.Method != "isBlockhashValid" || asked != base58.Encode(h[:]) {
			t.Errorf("asked %s %q", req.Method, asked)
		}
		n := calls.Add(1)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"context":{"slot":1},"value":%v}}`, req.ID, n <= validFor)
	}))
	defer srv.Close()
	rpc := newRPCClient(srv.URL)
	if err := awaitExpiry(context.Background(), rpc, h, time.Millisecond, time.Minute, io.Discard); err != nil || calls.Load() != 4 {
		t.Fatalf("awaitExpiry: %v after %d calls, want nil after 4", err, calls.Load())
	}
	calls.Store(0)
	validFor = 1 << 30
	err := awaitExpiry(context.Background(), rpc, h, time.Millisecond, 20*time.Millisecond, io.Discard)
	if err == nil || !strings.Contains(err.Error(), base58.Encode(h[:])) || !strings.Contains(err.Error(), "still valid") {
		t.Fatalf("a blockhash that never expires: %v", err)
	}
}

// fakeGenRPC serves what tpu gen asks of a node that confirms nothing: a
// blockhash, balances that never move, statuses all unknown, a slot that
// advances every slotTime, and the load's blockhash expired once asked
// about. It counts the isBlockhashValid calls.
func fakeGenRPC(t *testing.T, slotTime time.Duration, validAsked *atomic.Int32) *httptest.Server {
	start := time.Now()
	h := [32]byte{9}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := readRPCRequest(r)
		var result string
		switch req.Method {
		case "getBalance":
			result = `{"context":{"slot":1},"value":1000000000}`
		case "getSlot":
			result = fmt.Sprint(int64(time.Since(start) / slotTime))
		case "getLatestBlockhash":
			result = fmt.Sprintf(`{"context":{"slot":1},"value":{"blockhash":%q,"lastValidBlockHeight":151}}`, base58.Encode(h[:]))
		case "getSignatureStatuses":
			var sigs []string
			json.Unmarshal(req.Params[0], &sigs)
			result = `{"context":{"slot":1},"value":[` + strings.TrimSuffix(strings.Repeat("null,", len(sigs)), ",") + `]}`
		case "isBlockhashValid":
			validAsked.Add(1)
			result = `{"context":{"slot":1},"value":false}`
		default:
			t.Errorf("gen asked %s", req.Method)
			result = "null"
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":%s}`, req.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// gen warns after signing when its windows will outlive their
// blockhashes, with the slot time it measured from the node: 10 us slots
// give a blockhash about 1.5 ms, less than two of gen's shortest windows
// (5 ms). Which of the two warnings it gives depends on how long signing
// took, so the test asks only for the failure named.
func TestGenExpiryWarning(t *testing.T) {
	var validAsked atomic.Int32
	srv := fakeGenRPC(t, 10*time.Microsecond, &validAsked)
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	code, out, errOut := run(t, "", "gen", "--send", "udp", "--rpc", srv.URL, "--tpu", sink.LocalAddr().String(), "--accounts", "4",
		"--rate", "50", "--duration", "1s", "--settle", "0s")
	if code != 0 {
		t.Fatalf("gen: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "the node's slot time measured over") || !strings.Contains(errOut, "blockhash_not_found") {
		t.Errorf("no expiry warning with the measured slot time:\n%s", errOut)
	}
	// The node confirmed none of the 50 before the blockhash expired.
	if !strings.Contains(out, "expired 50 of 50 valid") {
		t.Errorf("the summary does not count the 50 as expired:\n%s", out)
	}
}

// Too few slots to measure: tpu run's default slot time, said to be an
// estimate.
func TestGenSlotTime(t *testing.T) {
	for _, c := range []struct {
		slots uint64
		over  time.Duration
		want  time.Duration
		desc  string
	}{
		{0, time.Second, stages.DefaultSlotTime, "an estimate"},
		{minSlotsMeasured - 1, time.Second, stages.DefaultSlotTime, "an estimate"},
		{25, 10 * time.Second, 400 * time.Millisecond, "measured over 25 slots"},
		{200, time.Second, 5 * time.Millisecond, "measured over 200 slots"},
	} {
		got, desc := genSlotTime(c.slots, c.over)
		if got != c.want || !strings.Contains(desc, c.desc) {
			t.Errorf("%d slots over %v: %v %q, want %v %q", c.slots, c.over, got, desc, c.want, c.desc)
		}
	}
}

// After the settle, the valid transactions still unconfirmed once the
// load's blockhash has expired are counted as expired: the final poll
// still finds the late ones, and what it does not find can never land.
// When all are confirmed, gen does not wait for the expiry.
func TestFinalPollExpired(t *testing.T) {
	var validAsked atomic.Int32
	rpc := newRPCClient(fakeGenRPC(t, time.Millisecond, &validAsked).URL)
	const n, upTo, late = 10, 8, 3
	sigs := make([][64]byte, n)
	for i := range sigs {
		sigs[i][0] = byte(i)
	}
	c := &confirmations{sigs: sigs, confirmed: make([]*sigStatus, n), query: func(q [][64]byte) ([]*sigStatus, error) {
		out := make([]*sigStatus, len(q))
		for k, s := range q {
			if s[0] < late { // confirmed, but only seen by the final poll
				out[k] = &sigStatus{Slot: 3}
			}
		}
		return out, nil
	}}
	expired, err := finalPoll(context.Background(), rpc, c, upTo, [32]byte{9}, time.Millisecond, time.Second, io.Discard)
	if err != nil || expired != upTo-late || c.count != late || validAsked.Load() != 1 {
		t.Fatalf("finalPoll: %d expired, %d confirmed, %d isBlockhashValid calls, %v; want %d, %d, 1, nil",
			expired, c.count, validAsked.Load(), err, upTo-late, late)
	}
	validAsked.Store(0)
	c = &confirmations{sigs: sigs, confirmed: make([]*sigStatus, n), count: upTo,
		query: func(q [][64]byte) ([]*sigStatus, error) { return make([]*sigStatus, len(q)), nil }}
	for j := range upTo {
		c.confirmed[j] = &sigStatus{Slot: 3}
	}
	if expired, err := finalPoll(context.Background(), rpc, c, upTo, [32]byte{9}, time.Millisecond, time.Second, io.Discard); err != nil || expired != 0 || validAsked.Load() != 0 {
		t.Fatalf("all confirmed: %d expired, %d isBlockhashValid calls, %v; want 0, 0, nil", expired, validAsked.Load(), err)
	}
}

// fakeBank is a node for tpu gen that lands a transfer only while its
// blockhash lives: a new blockhash every slot, each valid for
// bank.MaxProcessingAge slots, as the bank's. It reads gen's datagrams,
// and what it lands moves balances and is confirmed; what comes too late
// is counted expired.
type fakeBank struct {
	t        *testing.T
	start    time.Time
	slotTime time.Duration
	mu       sync.Mutex
	delta    map[[32]byte]int64
	landed   map[[64]byte]uint64
	expired  int
}

func (b *fakeBank) slot() uint64 { return uint64(time.Since(b.start) / b.slotTime) }

func hashOfSlot(slot uint64) [32]byte {
	var h [32]byte
	h[0] = 0xbb
	binary.LittleEndian.PutUint64(h[1:], slot)
	return h
}

// valid reports whether blockhash h is one the fake gave and still lives.
func (b *fakeBank) valid(h [32]byte) bool {
	if h[0] != 0xbb {
		return false
	}
	return binary.LittleEndian.Uint64(h[1:])+bank.MaxProcessingAge >= b.slot()
}

func (b *fakeBank) receive(pc net.PacketConn) {
	buf := make([]byte, 2048)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		v, err := txview.Parse(append([]byte(nil), buf[:n]...))
		if err != nil {
			continue
		}
		b.mu.Lock()
		if !b.valid(*v.RecentBlockhash()) {
			b.expired++
			b.mu.Unlock()
			continue
		}
		cb, _ := v.ComputeBudget()
		it := v.Instructions()
		in, _ := it.Next()
		from, to := *v.StaticKey(int(in.Accounts[0])), *v.StaticKey(int(in.Accounts[1]))
		amount := int64(binary.LittleEndian.Uint64(in.Data[4:]))
		b.delta[from] -= int64(runtime.FeeOf(v, cb).Total()) + amount
		b.delta[to] += amount
		b.landed[*v.Signature(0)] = b.slot()
		b.mu.Unlock()
	}
}

func (b *fakeBank) serveRPC() *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := readRPCRequest(r)
		var result string
		b.mu.Lock()
		switch req.Method {
		case "getBalance":
			var key string
			json.Unmarshal(req.Params[0], &key)
			k, _ := base58.Decode(key)
			result = fmt.Sprintf(`{"context":{"slot":1},"value":%d}`, 1_000_000_000+b.delta[[32]byte(k)])
		case "getSlot":
			result = fmt.Sprint(b.slot())
		case "getLatestBlockhash":
			h := hashOfSlot(b.slot())
			result = fmt.Sprintf(`{"context":{"slot":1},"value":{"blockhash":%q,"lastValidBlockHeight":1}}`, base58.Encode(h[:]))
		case "getSignatureStatuses":
			var sigs []string
			json.Unmarshal(req.Params[0], &sigs)
			out := make([]string, len(sigs))
			for i, s := range sigs {
				sig, _ := base58.Decode(s)
				if slot, ok := b.landed[[64]byte(sig)]; ok {
					out[i] = fmt.Sprintf(`{"slot":%d,"confirmations":0,"err":null,"confirmationStatus":"processed"}`, slot)
				} else {
					out[i] = "null"
				}
			}
			result = `{"context":{"slot":1},"value":[` + strings.Join(out, ",") + `]}`
		case "isBlockhashValid":
			var hs string
			json.Unmarshal(req.Params[0], &hs)
			h, _ := base58.Decode(hs)
			result = fmt.Sprintf(`{"context":{"slot":1},"value":%v}`, len(h) == 32 && b.valid([32]byte(h)))
		default:
			b.t.Errorf("gen asked %s", req.Method)
			result = "null"
		}
		b.mu.Unlock()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":%s}`, req.ID, result)
	}))
	b.t.Cleanup(srv.Close)
	return srv
}

// Issue 26: gen signed its whole load over one blockhash, so a run that
// outlived it (10 s of signing and 60 s of sending against 150 slots of
// 400 ms) lost a fifth to blockhash_not_found. Scaled down: slots of
// 20 ms give a blockhash 3 s, and gen sends for 5 s. Signing in windows,
// each over a fresh blockhash, it loses nothing: every transaction lands
// and confirms, none is expired, and the balances check out.
func TestGenRefreshesBlockhash(t *testing.T) {
	b := &fakeBank{t: t, start: time.Now(), slotTime: 20 * time.Millisecond, delta: map[[32]byte]int64{}, landed: map[[64]byte]uint64{}}
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	go b.receive(sink)
	srv := b.serveRPC()
	code, out, errOut := run(t, "", "gen", "--send", "udp", "--rpc", srv.URL, "--tpu", sink.LocalAddr().String(), "--accounts", "4",
		"--rate", "200", "--duration", "5s", "--settle", "10s")
	b.mu.Lock()
	expired, landed := b.expired, len(b.landed)
	b.mu.Unlock()
	if code != 0 || expired != 0 || landed != 1000 {
		t.Fatalf("gen: exit %d; the node saw %d transactions expired and landed %d of 1000\n%s\n%s", code, expired, landed, out, errOut)
	}
	for _, want := range []string{"confirmed 1000 of 1000 valid", "expired 0 of 1000 valid", "balances: all 4 accounts moved by exactly"} {
		if !strings.Contains(out, want) {
			t.Errorf("gen's summary lacks %q:\n%s", want, out)
		}
	}
	// 250 ms windows (a quarter of the 3 s blockhash life is more) of 50
	// transactions at 200/s, the first of 51: 20 windows, give or take
	// one for the schedule's rounding.
	var windows int
	_, after, _ := strings.Cut(out, "signed in ")
	if _, err := fmt.Sscanf(after, "%d windows", &windows); err != nil || windows < 19 || windows > 21 {
		t.Errorf("signed in %d windows (%v), want about 20:\n%s", windows, err, out)
	}
}
