package pubsub

import (
	"crypto/ed25519"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/runtime"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

// signed builds a committed transaction record: a transfer from a new
// key to to, or a simple vote when vote is set.
func signed(t *testing.T, seed byte, to banking.Pubkey, vote bool) ledger.TxRecord {
	t.Helper()
	k := ed25519.NewKeyFromSeed(append(make([]byte, 31), seed))
	from := txview.PublicKey(k)
	ix := txview.Transfer(from, to, 5)
	if vote {
		ix = txview.Ix{Program: txview.VoteProgram, Accounts: []txview.AccountMeta{{Key: to, Writable: true}}, Data: []byte{1}}
	}
	m := txview.Message{Payer: from, Instructions: []txview.Ix{ix}}
	tx, err := m.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	return ledger.TxRecord{Tx: tx, TxMeta: ledger.TxMeta{Fee: 5000, Writable: 3, Pre: make([]uint64, 3), Post: make([]uint64, 3)}}
}

// TestFeedLogs: each logs subscription is told of the transactions its
// filter takes, slot by slot in the bank's order, those of lost slots
// too, at its level: processed and confirmed as the slot commits,
// finalized once it is durable; the logs are the runtime's.
func TestFeedLogs(t *testing.T) {
	watched := banking.Pubkey{7}
	a := signed(t, 1, watched, false)
	b := signed(t, 2, banking.Pubkey{8}, false)
	v := signed(t, 3, banking.Pubkey{9}, true)
	l := &fakeLedger{committed: 2, durable: 2, txs: map[uint64][]ledger.TxRecord{3: {a, v}, 4: {b}, 5: {a}}}
	r := newRegistry()
	f := newFeed(l, r, 1, slog.Default())
	all, votes, mentions, final := &box{}, &box{}, &box{}, &box{}
	nop := func(uint64) []byte { return nil }
	for _, s := range []*sub{
		{kind: kindLogs, to: all, logs: logsAll, commitment: jsonrpc.Processed},
		{kind: kindLogs, to: votes, logs: logsAllWithVotes, commitment: jsonrpc.Confirmed},
		{kind: kindLogs, to: mentions, logs: logsMentions, key: watched, commitment: jsonrpc.Confirmed},
		{kind: kindLogs, to: final, logs: logsAll, commitment: jsonrpc.Finalized},
	} {
		if _, e := r.add(s, 10, nop); e != nil {
			t.Fatal(e)
		}
	}
	// Slots 3 and 4 lost, 5 applied: the feed reads all three back.
	l.committed, l.durable = 5, 3
	f.apply(commit{rec: ledger.SlotRecord{Slot: 5}})
	entry := func(slot uint64, rec ledger.TxRecord) string {
		view, _ := txview.Parse(rec.Tx)
		logs, _ := json.Marshal(runtime.LogMessages(view, runtime.ExecMeta{Err: rec.Err, Fee: rec.Fee, Pre: rec.Pre}))
		return `{"context":{"slot":` + itoa(slot) + `},"value":{"signature":"` + base58.Encode(view.Signature(0)[:]) + `","err":null,"logs":` + string(logs) + `}}`
	}
	for _, c := range []struct {
		b    *box
		want []string
	}{
		{all, []string{entry(3, a), entry(4, b), entry(5, a)}},
		{votes, []string{entry(3, a), entry(3, v), entry(4, b), entry(5, a)}},
		{mentions, []string{entry(3, a), entry(5, a)}},
		{final, []string{entry(3, a)}},
	} {
		if got := results(t, c.b, "logsNotification"); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
	if !strings.Contains(entry(3, a), `"Program 11111111111111111111111111111111 invoke [1]"`) {
		t.Fatalf("a transfer's logs: %s", entry(3, a))
	}
	// The rest become durable.
	l.committed, l.durable = 6, 6
	f.apply(commit{rec: ledger.SlotRecord{Slot: 6}})
	if got := results(t, final, "logsNotification"); len(got) != 3 || got[2] != entry(5, a) {
		t.Fatalf("finalized: %q", got)
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// TestFeedProgramsLostSlots: a program subscription is told of the
// accounts that slots the listener could not queue wrote (their writers
// read from the history, their values as the ledger has them now), if
// they pass its filters; without history those slots are counted.
func TestFeedProgramsLostSlots(t *testing.T) {
	prog := banking.Pubkey{5}
	owned, other := banking.Pubkey{7}, banking.Pubkey{8}
	rec := signed(t, 1, owned, false) // writes its payer and owned
	rec2 := signed(t, 2, other, false)
	l := &fakeLedger{committed: 2, durable: 2, txs: map[uint64][]ledger.TxRecord{3: {rec}, 4: {rec2}},
		accounts: map[banking.Pubkey]bank.Account{
			owned: *bank.New(owned, bank.Account{Lamports: 10, Owner: prog, Data: []byte{1, 2, 3}}),
			other: *bank.New(other, bank.Account{Lamports: 20, Owner: prog, Data: []byte{1}}),
		}}
	r := newRegistry()
	f := newFeed(l, r, 1, slog.Default())
	b := &box{}
	size := uint64(3)
	if _, e := r.add(&sub{kind: kindProgram, to: b, key: prog, commitment: jsonrpc.Confirmed, encoding: encBase64, filters: []filter{{size: &size}}}, 10, func(uint64) []byte { return nil }); e != nil {
		t.Fatal(e)
	}
	l.committed, l.durable = 5, 5
	for s := uint64(3); s <= 5; s++ {
		f.listen(&ledger.SlotChanges{Record: ledger.SlotRecord{Slot: s}})
	}
	<-f.queue // slot 3
	f.apply(commit{rec: ledger.SlotRecord{Slot: 5}})
	got := results(t, b, "programNotification")
	want := `{"context":{"slot":5},"value":{"pubkey":"` + base58.Encode(owned[:]) + `","account":{"data":["AQID","base64"],"executable":false,"lamports":10,"owner":"` + base58.Encode(prog[:]) + `","rentEpoch":18446744073709551615,"space":3}}}`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %q\nwant %s", got, want)
	}
	if f.lostAccounts.Load() != 0 {
		t.Fatalf("lost accounts %d with history", f.lostAccounts.Load())
	}
	// Without history the lost slots' accounts are unknown: counted.
	l.txs = nil
	l.committed, l.durable = 8, 8
	for s := uint64(6); s <= 8; s++ {
		f.listen(&ledger.SlotChanges{Record: ledger.SlotRecord{Slot: s}})
	}
	<-f.queue
	f.apply(commit{rec: ledger.SlotRecord{Slot: 8}})
	if n := f.lostAccounts.Load(); n != 3 {
		t.Fatalf("lost accounts %d, want 3 (slots 6 to 8)", n)
	}
}

// TestProgramFilters: dataSize and memcmp (base58, base64) as Agave's
// RpcFilterType, with its limits.
func TestProgramFilters(t *testing.T) {
	data := []byte{1, 2, 3, 4}
	for _, c := range []struct {
		raw   string
		match bool
		err   string
	}{
		{`{"dataSize":4}`, true, ""},
		{`{"dataSize":5}`, false, ""},
		{`{"memcmp":{"offset":1,"bytes":"` + base58.Encode([]byte{2, 3}) + `"}}`, true, ""},
		{`{"memcmp":{"offset":1,"bytes":"AgM=","encoding":"base64"}}`, true, ""},
		{`{"memcmp":{"offset":3,"bytes":"AgM=","encoding":"base64"}}`, false, ""},
		{`{"memcmp":{"offset":9,"bytes":"2"}}`, false, ""},
		{`{"memcmp":{"offset":-1,"bytes":"2"}}`, false, "offset"},
		{`{"memcmp":{"offset":0,"bytes":"AgM=","encoding":"base32"}}`, false, "encoding"},
		{`{"memcmp":{"offset":0,"bytes":"` + strings.Repeat("2", 176) + `"}}`, false, "less than 176"},
		{`{"tokenAccountState":null}`, false, "a filter is"},
		{`{"dataSize":1,"memcmp":{"offset":0,"bytes":""}}`, false, "a filter is"},
	} {
		f, e := parseFilter(json.RawMessage(c.raw))
		if c.err != "" {
			if e == nil || e.Code != -32602 || !strings.Contains(e.Message, c.err) {
				t.Errorf("%s: %+v, want an error with %q", c.raw, e, c.err)
			}
			continue
		}
		if e != nil || f.match(data) != c.match {
			t.Errorf("%s: %+v, match %v, want %v", c.raw, e, f.match(data), c.match)
		}
	}
}

// TestEncodeJSONParsed: accountSubscribe's and programSubscribe's
// jsonParsed parses a lookup table (package parsed) and falls back to
// base64 for data no parser takes, as Agave's encode_ui_account.
func TestEncodeJSONParsed(t *testing.T) {
	data := make([]byte, bank.TableMetaSize+32)
	bank.PutMeta(data, bank.NewTableMeta(banking.Pubkey{4}))
	table := bank.New(banking.Pubkey{1}, bank.Account{Lamports: 9, Owner: banking.LookupTableProgram, Data: data})
	got, _ := json.Marshal(encodeAccount(table, encJSONParsed))
	if !strings.Contains(string(got), `"data":{"program":"address-lookup-table","parsed":{"type":"lookupTable"`) || !strings.Contains(string(got), `"space":88}`) {
		t.Fatalf("table: %s", got)
	}
	other := bank.New(banking.Pubkey{2}, bank.Account{Lamports: 9, Owner: banking.Pubkey{5}, Data: []byte{1, 2, 3}})
	if got, _ := json.Marshal(encodeAccount(other, encJSONParsed)); !strings.Contains(string(got), `"data":["AQID","base64"]`) {
		t.Fatalf("an account of a program without a parser: %s", got)
	}
}
