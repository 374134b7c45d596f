package stages

import (
	"testing"

	"github.com/tpugo/tpu/packet"
)

// Every terminal outcome is decided by some stage, banking's by banking
// alone, and no_credits by the two stages that send on a budget.
func TestDecidesEveryOutcome(t *testing.T) {
	for o := packet.OutcomeNone + 1; o < packet.NumOutcomes; o++ {
		var by []string
		for _, st := range []string{stageFetch, stageSigverify, stageBanking} {
			if decides(st, o) {
				by = append(by, st)
			}
		}
		switch {
		case o == packet.OutcomeNoCredits:
			if len(by) != 2 || by[0] != stageFetch || by[1] != stageSigverify {
				t.Errorf("%s decided by %v, want fetch and sigverify", o, by)
			}
		case len(by) != 1:
			t.Errorf("%s decided by %v, want one stage", o, by)
		case o >= packet.OutcomeBlockhashNotFound && by[0] != stageBanking:
			t.Errorf("%s decided by %v, want banking", o, by)
		}
	}
	if decides(stageFetch, packet.OutcomeNone) || decides("other", packet.OutcomeParse) {
		t.Error("an outcome decided by no stage, or by a stage that is none")
	}
}

// bankingCounts: what banking took in (live packets only) less what it
// booked is what it buffers.
func TestBankingCounts(t *testing.T) {
	pool, err := packet.NewPool(packet.Config{BatchCap: 8, MaxIdle: 2})
	if err != nil {
		t.Fatal(err)
	}
	b := pool.Get()
	b.Grow(5)
	b.At(1).Discard(packet.OutcomeBadSignature)
	b.At(3).Discard(packet.OutcomeParse)
	var c bankingCounts
	c.took(b) // 3 live
	b.Release()
	c.outcomes[packet.OutcomeExecutedOK].Add(1)
	if got := c.buffered(); got != 2 {
		t.Fatalf("buffered %d, want 3 taken in - 1 booked = 2", got)
	}
	c.outcomes[packet.OutcomeEvicted].Add(2)
	if got := c.buffered(); got != 0 {
		t.Fatalf("buffered %d, want 0", got)
	}
}
