package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/txview"
)

// TestSubmitUsesParsed: a packet that carries its parse result
// (Meta.Parsed, as sigverify leaves it) is not parsed again by admission,
// nor by the copy handoff's copy; one without is parsed once. The counts
// need the invariants build (txview.Parses); the outcomes are checked in
// both.
func TestSubmitUsesParsed(t *testing.T) {
	for _, h := range []Handoff{HandoffRefcount, HandoffCopy} {
		for _, parsed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/parsed=%v", h, parsed), func(t *testing.T) {
				b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 40}})
				defer b.Close()
				s := newScheduler(t, Config{Handoff: h, Workers: 2}, b)
				txs := workload(t, b.LatestBlockhash(), 16, "none", rand.New(rand.NewPCG(1, 2)))
				pool, _ := packet.NewPool(packet.Config{BatchCap: 16})
				batch := banktest.BatchOf(t, pool, txs...)
				if parsed {
					for i := range batch.Packets() {
						p := batch.At(i)
						v, err := txview.Parse(p.Data())
						if err != nil {
							t.Fatal(err)
						}
						p.Meta.Parsed = packet.Parsed(v.Layout())
					}
				}
				before := txview.Parses()
				s.Submit(batch)
				drain(t, s)
				parses := txview.Parses() - before
				checkAccounting(t, s)
				if got := s.Stats().Outcomes[packet.OutcomeExecutedOK]; got != 16 {
					t.Fatalf("executed %d of 16: %v", got, s.Stats().Outcomes)
				}
				if pool.Stats().Live != 0 {
					t.Fatal("batch still held after the drain")
				}
				want := uint64(16)
				if parsed {
					want = 0
				}
				if !txview.Counting {
					t.Logf("plain build: parse count not checked (Parses counts with -tags invariants)")
					return
				}
				if parses != want {
					t.Fatalf("banking parsed %d times for 16 packets, want %d", parses, want)
				}
			})
		}
	}
}
