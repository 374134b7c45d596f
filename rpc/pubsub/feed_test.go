package pubsub

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// fakeLedger is a Ledger in memory.
type fakeLedger struct {
	committed, durable uint64
	statuses           map[uint64][]ledger.SigStatus
	accounts           map[banking.Pubkey]bank.Account
	listen             func(*ledger.SlotChanges)
	// txs is each slot's history; nil: the ledger keeps none.
	txs map[uint64][]ledger.TxRecord
}

func (l *fakeLedger) OnCommitChanges(f func(*ledger.SlotChanges)) { l.listen = f }
func (l *fakeLedger) CommittedSlot() uint64                       { return l.committed }
func (l *fakeLedger) DurableSlot() uint64                         { return l.durable }
func (l *fakeLedger) SlotStatuses(slot uint64) ([]ledger.SigStatus, error) {
	return l.statuses[slot], nil
}
func (l *fakeLedger) StatusesOf(sigs [][64]byte, from, through uint64) (map[[64]byte]ledger.Status, error) {
	out := map[[64]byte]ledger.Status{}
	for s := through; s <= from; s++ {
		for _, st := range l.statuses[s] {
			for _, sig := range sigs {
				if sig == st.Signature {
					out[sig] = st.Status
				}
			}
		}
	}
	return out, nil
}
func (l *fakeLedger) SlotTransactions(slot uint64, max int) ([]ledger.TxRecord, error) {
	if l.txs == nil {
		return nil, ledger.ErrNoHistory
	}
	return l.txs[slot], nil
}
func (l *fakeLedger) CommittedAccount(key banking.Pubkey) (bank.Account, bool, error) {
	a, ok := l.accounts[key]
	return a, ok, nil
}

// results returns the results of b's notifications of method, in order.
func results(t *testing.T, b *box, method string) []string {
	t.Helper()
	var out []string
	for _, m := range b.msgs {
		var n struct {
			Method string
			Params struct{ Result json.RawMessage }
		}
		if json.Unmarshal([]byte(m), &n) == nil && n.Method == method {
			out = append(out, string(n.Params.Result))
		}
	}
	return out
}

// TestFeedCatchesUp: slots the listener could not queue are counted, and
// the next slot that comes brings them all: their slot and root
// notifications, their statuses (read from the fakeLedger), and the followed
// accounts as the fakeLedger has them.
func TestFeedCatchesUp(t *testing.T) {
	sig := [64]byte{9}
	key := banking.Pubkey{3}
	l := &fakeLedger{committed: 2, durable: 2,
		statuses: map[uint64][]ledger.SigStatus{4: {{Signature: sig, Status: ledger.Status{Slot: 4}}}},
		accounts: map[banking.Pubkey]bank.Account{key: {Lamports: 77, Owner: banking.SystemProgram}},
	}
	r := newRegistry()
	f := newFeed(l, r, 1, slog.Default())
	b := &box{}
	nop := func(uint64) []byte { return nil }
	for _, s := range []*sub{
		{kind: kindSlot, to: b}, {kind: kindRoot, to: b},
		{kind: kindSignature, to: b, sig: sig, commitment: jsonrpc.Confirmed},
		{kind: kindAccount, to: b, key: key, commitment: jsonrpc.Processed, encoding: encBase64},
		{kind: kindAccount, to: b, key: key, commitment: jsonrpc.Finalized, encoding: encBase58},
	} {
		if _, e := r.add(s, 10, nop); e != nil {
			t.Fatal(e)
		}
	}
	// Slots 3 to 5 commit; the queue holds one, the feed is not running.
	l.committed, l.durable = 5, 4
	for s := uint64(3); s <= 5; s++ {
		f.listen(&ledger.SlotChanges{Record: ledger.SlotRecord{Slot: s}})
	}
	if f.lost.Load() != 2 || len(f.queue) != 1 {
		t.Fatalf("lost %d, queued %d", f.lost.Load(), len(f.queue))
	}
	<-f.queue // slot 3, taken off unapplied: the feed catches up on it too
	f.apply(commit{rec: ledger.SlotRecord{Slot: 5}})

	want := map[string][]string{
		"slotNotification":      {`{"parent":2,"root":4,"slot":3}`, `{"parent":3,"root":4,"slot":4}`, `{"parent":4,"root":4,"slot":5}`},
		"rootNotification":      {"3", "4"},
		"signatureNotification": {`{"context":{"slot":4},"value":{"err":null}}`},
		"accountNotification":   {`{"context":{"slot":5},"value":{"data":["","base64"],"executable":false,"lamports":77,"owner":"11111111111111111111111111111111","rentEpoch":18446744073709551615,"space":0}}`},
	}
	for m, w := range want {
		if got := results(t, b, m); strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s:\n%s\nwant\n%s", m, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
	// The finalized account subscription waits for slot 5 to be durable.
	l.committed, l.durable = 6, 6
	f.apply(commit{rec: ledger.SlotRecord{Slot: 6}})
	got := results(t, b, "accountNotification")
	if len(got) != 2 || !strings.Contains(got[1], `"context":{"slot":5}`) || !strings.Contains(got[1], `"data":["","base58"]`) {
		t.Fatalf("finalized account notification: %q", got)
	}
	if roots := results(t, b, "rootNotification"); strings.Join(roots, ",") != "3,4,5,6" {
		t.Fatalf("roots %v", roots)
	}
}
