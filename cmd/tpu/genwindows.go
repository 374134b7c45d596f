package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/loadgen"
)

// tpu gen signs its load in windows as it sends, each over a blockhash
// fetched just before: a long run (10 s of signing, 60 s of sending)
// would otherwise outlive the one blockhash it signed with, and lose what
// it sent after 150 slots to blockhash_not_found.

// maxWindow is the longest stretch of the schedule one blockhash signs;
// shorter where the node's blockhash lives less than 4 windows (fast
// slots), never below minWindow.
const (
	maxWindow = 250 * time.Millisecond
	minWindow = 5 * time.Millisecond
)

// windowFor returns the window for a slot time: a quarter of the
// blockhash's life (a window is signed one window ahead, so its
// blockhash is at most two windows old when its last transaction goes),
// within [minWindow, maxWindow].
func windowFor(slotTime time.Duration) time.Duration {
	return min(maxWindow, max(minWindow, bank.MaxProcessingAge*slotTime/4))
}

// windows is a load as sent: transaction i is ready once published > i,
// its bytes then in txs[i], never written again.
type windows struct {
	load      *loadgen.Load
	sched     loadgen.Schedule
	txs       [][]byte
	published atomic.Int64
	more      chan struct{} // closed and replaced at each publication; guarded by mu
	mu        sync.Mutex
	last      atomic.Pointer[[32]byte] // the newest blockhash published
	stop      chan struct{}
	stopOnce  sync.Once
	refreshed atomic.Int64 // windows signed after the first, for the summary
}

// close stops the signing (sign returns) and any wait in tx.
func (w *windows) close() { w.stopOnce.Do(func() { close(w.stop) }) }

// newWindows takes a load whose first first transactions are signed over
// bh (loadgen.Config.SignFirst).
func newWindows(load *loadgen.Load, first int, bh [32]byte) *windows {
	w := &windows{load: load, txs: make([][]byte, len(load.Txs)), more: make(chan struct{}), stop: make(chan struct{})}
	copy(w.txs[:first], load.Txs[:first])
	w.published.Store(int64(first))
	w.last.Store(&bh)
	return w
}

// tx returns transaction i's bytes as sent, waiting for its window
// (loadgen.SendConfig.Tx), or nil once the signing has stopped without
// it.
func (w *windows) tx(i int) []byte {
	for int64(i) >= w.published.Load() {
		w.mu.Lock()
		more := w.more
		w.mu.Unlock()
		if int64(i) < w.published.Load() {
			break
		}
		select {
		case <-more:
		case <-w.stop:
			return nil
		}
	}
	return w.txs[i]
}

// publish makes txs[from:from+len(part)] ready, signed over bh.
func (w *windows) publish(from int, part [][]byte, bh [32]byte) {
	copy(w.txs[from:], part)
	w.last.Store(&bh)
	w.published.Store(int64(from + len(part)))
	w.mu.Lock()
	close(w.more)
	w.more = make(chan struct{})
	w.mu.Unlock()
}

// ready returns how many transactions are ready.
func (w *windows) ready() int { return int(w.published.Load()) }

// blockhash returns the newest blockhash published: the last to expire.
func (w *windows) blockhash() [32]byte { return *w.last.Load() }

// sign signs the load's unsigned transactions a window ahead of the
// schedule, each window over a blockhash fetched just before, until all
// are published or stop closes. slot0 at t0 is where its measure of the
// node's slot time starts; slotTime is the estimate until it has
// minSlotsMeasured slots. A failed fetch signs over the last blockhash
// and says so once.
func (w *windows) sign(ctx context.Context, rpc *rpcClient, slot0 uint64, t0 time.Time, slotTime time.Duration, warn io.Writer) error {
	warned := false
	for next := w.ready(); next < len(w.txs); {
		if slot, err := rpc.slot(ctx); err == nil && slot >= slot0+minSlotsMeasured {
			slotTime = time.Since(t0) / time.Duration(slot-slot0)
		}
		win := windowFor(slotTime)
		// Sign window [next, end) one window before it is due.
		if d := time.Until(w.sched.At(next).Add(-win)); d > 0 {
			select {
			case <-time.After(d):
			case <-w.stop:
				return nil
			}
		}
		end := min(len(w.txs), max(next+1, w.sched.Due(w.sched.At(next).Add(win))))
		bh, err := rpc.latestBlockhash(ctx)
		if err != nil {
			if !warned {
				fmt.Fprintf(warn, "tpu gen: a fresh blockhash for transactions %d on: %v; signing over the last one\n", next, err)
				warned = true
			}
			bh = w.blockhash()
		}
		part, err := w.load.Sign(next, end, bh, func(j int) []byte { return w.txs[j] })
		if err != nil {
			return err
		}
		w.publish(next, part, bh)
		w.refreshed.Add(1)
		next = end
	}
	return nil
}
