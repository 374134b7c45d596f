package scheduler

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestSimulateAgreesWithExecution simulates transactions of every
// outcome against the committed state, checks that nothing changed, then
// executes them through the scheduler and checks that the simulation
// predicted the status, the units and the post balances.
func TestSimulateAgreesWithExecution(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	newcomer := txview.PublicKey(banktest.FreshKey(1))
	cases := []struct {
		name string
		tx   []byte
		err  string
		logs int
	}{
		{"transfer", banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(1), 777), "ok", 2},
		{"transfer creating an account", banktest.TransferTx(t, bh, banktest.Key(2), newcomer, 2_000_000), "ok", 2},
		{"too few lamports", banktest.TransferTx(t, bh, banktest.Key(3), banktest.Pub(1), 2_000_000_000_000), "InstructionError(0, Custom(1))", 3},
		{"new account below rent", banktest.TransferTx(t, bh, banktest.Key(4), txview.PublicKey(banktest.FreshKey(2)), 1000), "InsufficientFundsForRent { account_index: 1 }", 2},
		{"unknown program", banktest.SignTx(t, bh, banktest.Key(6), []txview.Ix{{Program: banking.Pubkey{9, 9, 9}, Data: []byte{1}}}), "ProgramAccountNotFound", 0},
		{"memo", banktest.SignTx(t, bh, banktest.Key(8), []txview.Ix{txview.Memo([]byte("hello"), banktest.Pub(8))}), "ok", 5},
		{"memo, bad utf-8", banktest.SignTx(t, bh, banktest.Key(9), []txview.Ix{txview.Memo([]byte{0xff, 0xfe})}), "InstructionError(0, InvalidInstructionData)", 4},
		{"compute limit too low", banktest.TransferTx(t, bh, banktest.Key(10), banktest.Pub(1), 5, txview.SetComputeUnitLimit(100)), "InstructionError(0, ComputationalBudgetExceeded)", 2},
		{"all or nothing", banktest.SignTx(t, bh, banktest.Key(11), []txview.Ix{
			txview.Transfer(banktest.Pub(11), banktest.Pub(1), 1000),
			txview.Transfer(banktest.Pub(11), banktest.Pub(1), 5_000_000_000_000),
		}), "InstructionError(1, Custom(1))", 5},
	}
	sims := make([]runtime.Simulation, len(cases))
	var txs [][]byte
	for i, c := range cases {
		v := banktest.Parse(t, c.tx)
		sim, err := runtime.Simulate(b.Ledger(), v)
		if err != nil {
			t.Fatal(err)
		}
		if got := sim.Err.String(); got != c.err {
			t.Errorf("%s: simulated %s, want %s", c.name, got, c.err)
		}
		if len(sim.Logs) != c.logs {
			t.Errorf("%s: %d logs, want %d: %q", c.name, len(sim.Logs), c.logs, sim.Logs)
		}
		sims[i] = sim
		txs = append(txs, c.tx)
	}
	if !strings.HasPrefix(sims[2].Logs[1], "Transfer: insufficient lamports 999999995000, need 2000000000000") {
		t.Errorf("too few lamports: %q", sims[2].Logs)
	}
	// The memo's logged units are what execute charged it.
	for _, i := range []int{5, 6} {
		want := fmt.Sprintf(" consumed %d of 200000 compute units", sims[i].Units)
		if l := sims[i].Logs[len(sims[i].Logs)-2]; !strings.HasSuffix(l, want) {
			t.Errorf("%s: %q, want the units executed (%d)", cases[i].name, l, sims[i].Units)
		}
	}
	// Nothing changed, live or committed.
	for i := 0; i < 16; i++ {
		if got := lamports(b, banktest.Pub(i)); got != 1_000_000_000_000 {
			t.Fatalf("account %d: %d lamports after simulating", i, got)
		}
		if a, _, _ := b.Committed().CommittedAccount(banktest.Pub(i)); a.Lamports != 1_000_000_000_000 {
			t.Fatalf("account %d: %d lamports committed after simulating", i, a.Lamports)
		}
	}
	if _, ok := b.Account(newcomer); ok {
		t.Fatal("simulation created an account")
	}

	s.Submit(banktest.BatchOf(t, pool, txs...))
	drain(t, s)
	endSlot(t, s)
	checkAccounting(t, s)
	for i, c := range cases {
		v := banktest.Parse(t, c.tx)
		st, ok := b.Status(bh, v.Signature(0))
		if !ok {
			t.Fatalf("%s: no status", c.name)
		}
		if st.Err != sims[i].Err {
			t.Errorf("%s: executed %v, simulated %v", c.name, st.Err, sims[i].Err)
		}
		for k := 0; k < v.NumStaticKeys(); k++ {
			key := *v.StaticKey(k)
			post, _, ok := sims[i].Account(key)
			if ok != (c.err == "ok") {
				t.Errorf("%s: post state of key %d reported %v", c.name, k, ok)
			}
			if ok && post.Lamports != lamports(b, key) && key != banktest.Pub(1) { // banktest.Pub(1) receives from several
				t.Errorf("%s: key %d simulated %d lamports, executed %d", c.name, k, post.Lamports, lamports(b, key))
			}
		}
	}
	if post, exists, _ := sims[1].Account(newcomer); !exists || post.Lamports != 2_000_000 {
		t.Errorf("newcomer after simulation: %+v %v", post, exists)
	}
}

func TestSimulateRefusals(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	bh := b.LatestBlockhash()
	table := banking.Pubkey{7, 7}
	v0 := txview.Message{Version: txview.V0, Payer: banktest.Pub(0), Blockhash: bh,
		Instructions: []txview.Ix{txview.Transfer(banktest.Pub(0), banktest.Pub(20), 1)},
		Tables:       []txview.LookupTable{{Key: table, Addresses: []banking.Pubkey{banktest.Pub(20)}}}}
	lookup, err := v0.Sign(banktest.Key(0))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tx   []byte
		err  string
	}{
		{"payer not found", banktest.TransferTx(t, bh, banktest.FreshKey(3), banktest.Pub(1), 1), "AccountNotFound"},
		{"duplicate budget instruction", banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(1), 1, txview.SetComputeUnitLimit(1000), txview.SetComputeUnitLimit(2000)), "DuplicateInstruction(2)"},
		{"bad heap frame", banktest.TransferTx(t, bh, banktest.Key(0), banktest.Pub(1), 1, txview.RequestHeapFrame(1000)), "InstructionError(1, InvalidInstructionData)"},
		{"lookup table", lookup, "AddressLookupTableNotFound"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sim, err := runtime.Simulate(b.Ledger(), banktest.Parse(t, c.tx))
			if err != nil {
				t.Fatal(err)
			}
			if got := sim.Err.String(); got != c.err {
				t.Fatalf("simulated %s, want %s", got, c.err)
			}
			if sim.Executed || sim.Logs != nil || sim.Units != 0 {
				t.Fatalf("not executed, yet %+v", sim)
			}
		})
	}
}

// TestSimulateConcurrent simulates from several goroutines while the
// scheduler executes and commits slots: run with -race, it checks that
// Simulate touches nothing the workers or the committer write.
func TestSimulateConcurrent(t *testing.T) {
	b := banktest.OpenBank(t, bank.Config{})
	defer b.Close()
	s := newScheduler(t, Config{Workers: 2}, b)
	pool, _ := packet.NewPool(packet.Config{})
	bh := b.LatestBlockhash()
	probe := banktest.Parse(t, banktest.TransferTx(t, bh, banktest.Key(15), banktest.Pub(14), 1_000))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				sim, err := runtime.Simulate(b.Ledger(), probe)
				if err != nil || sim.Err.IsErr() || sim.Units != runtime.SystemUnits {
					errs <- sim.Err.String()
					return
				}
			}
		}()
	}
	for slot := 0; slot < 5; slot++ {
		var txs [][]byte
		for i := 0; i < 10; i++ {
			txs = append(txs, banktest.TransferTx(t, bh, banktest.Key(i), banktest.Pub(i+1), uint64(1+slot*10+i)))
		}
		s.Submit(banktest.BatchOf(t, pool, txs...))
		drain(t, s)
		endSlot(t, s)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("simulation failed while banking ran: %s", e)
	}
	checkAccounting(t, s)
}
