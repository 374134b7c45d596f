package pubsub_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/coder/websocket"
	solana "github.com/gagliardetto/solana-go"

	"github.com/tpugo/tpu/rpc/pubsub"
)

// crowdHeapBound is what issue 26's 128-connection attack
// (TestSlowReaderCrowdMemory) may add to the Go heap, live after a GC,
// with the server's default limits; README's security section quotes
// it. Most of what it adds is the 131,072 subscriptions themselves
// (about 470 bytes each): the notifications queued share one encoding a
// slot. Before the fix (84bc77d) the same test grew the heap by 570 MB
// (RSS 42 to 901 MB), and tpu run's RSS went from 172 MB to 1,456 MB.
const crowdHeapBound = 96 << 20

// heapLive returns the Go heap's live bytes after a full GC: what the
// process holds, not what it has yet to collect.
func heapLive() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rss returns the process's resident set (VmRSS, Linux), or 0 where it
// cannot be read. Logged, not asserted: it never shrinks promptly after
// a GC and counts every earlier test of the binary.
func rss() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestSlowReaderCrowdMemory is issue 26's 128-connection attack at its
// full size, with the server's default limits: 128 connections (from
// four addresses, within the per-IP limit), each with 1,024 base64
// accountSubscribes to the genesis lookup table (8,248 bytes, 11 KB a
// notification), that never read, and a transfer to the table each
// round. The Go heap grows by at most crowdHeapBound at the attack's
// peak, and an honest client, reading, gets every slot's notification
// and the table's every change. The bytes queued, counting a shared
// encoding in full in each queue, stay within MaxQueueBytes' default and
// one message: without the byte bounds they reach 1.5 GB, the heap the
// old per-subscription encodings took. Under -race it runs with 128
// subscriptions a connection: at ten times the cost, making 131,072 of
// them starves the feed until it loses slots, and their catch-up cuts
// every attacker before the attack begins.
func TestSlowReaderCrowdMemory(t *testing.T) {
	const conns, rounds = 128, 8
	subs := int64(1024)
	if raceEnabled {
		subs = 128
	}
	const oneMessage = 64 << 10 // more than a base64 table notification
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	table, _ := bank.GenesisTable(seed)
	base, baseRSS := heapLive(), rss()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range conns {
		ws, _, err := dialFrom(t, n.ps.URL(), fmt.Sprintf("127.0.0.%d", 40+i%4))
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range subs {
				req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"accountSubscribe","params":[%q,{"encoding":"base64","commitment":"processed"}]}`, j+1, solana.PublicKey(table))
				if ws.Write(ctx, websocket.MessageText, []byte(req)) != nil {
					return // cut: the bounds at work
				}
			}
			// and never reads
		}()
	}
	wg.Wait()
	// The server reads the requests in its own time (slowly under
	// -race): wait until it has made every subscription, so that the
	// attack is whole before the table changes.
	for deadline := time.Now().Add(2 * time.Minute); n.ps.Stats().Subscriptions < conns*subs; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d subscriptions made after 2 minutes; %+v", n.ps.Stats().Subscriptions, conns*subs, n.ps.Stats())
		}
	}
	subscribed, subHeap := n.ps.Stats().Subscriptions, heapLive()
	peak, peakRSS := subHeap, rss()
	honest := n.dial(t)
	aid := honest.subscribe("accountSubscribe", solana.PublicKey(table).String(), map[string]string{"encoding": "base64", "commitment": "processed"})
	sid := honest.subscribe("slotSubscribe")
	var most int64
	var lastSlot uint64
	for i := range rounds {
		n.send(t, n.transfer(t, solana.PublicKey(table), uint64(1+i)))
		for got := false; !got; {
			m := honest.next()
			switch m.Params.Subscription {
			case sid:
				var s struct{ Slot uint64 }
				if err := json.Unmarshal(m.Params.Result, &s); err != nil {
					t.Fatal(err)
				}
				if lastSlot != 0 && s.Slot != lastSlot+1 {
					t.Fatalf("round %d: slot %d after %d: the honest client missed a slot", i, s.Slot, lastSlot)
				}
				lastSlot = s.Slot
			case aid:
				got = true
			}
			most = max(most, n.ps.Stats().QueuedBytes)
		}
		peak, peakRSS = max(peak, heapLive()), max(peakRSS, rss())
	}
	st := n.ps.Stats()
	grew := int64(peak) - int64(base)
	t.Logf("%d subscriptions made; Go heap live %.1f MB before, %.1f MB subscribed, %.1f MB at the peak (+%.1f MB); RSS %.0f MB before, %.0f MB at most; at most %.1f MB queued; %+v",
		subscribed, mb(base), mb(subHeap), mb(peak), float64(grew)/1e6, mb(baseRSS), mb(peakRSS), float64(most)/1e6, st)
	if st.Encodings == 0 {
		t.Fatal("the table was never notified: the attack did not run")
	}
	if most > pubsub.DefaultMaxQueueBytes+oneMessage {
		t.Fatalf("%d bytes queued at once, more than MaxQueueBytes' default %d and one message", most, pubsub.DefaultMaxQueueBytes)
	}
	if grew > crowdHeapBound {
		t.Fatalf("the Go heap grew by %.1f MB under the attack, more than the documented %d MiB", float64(grew)/1e6, crowdHeapBound>>20)
	}
}

func mb(b uint64) float64 { return float64(b) / 1e6 }
