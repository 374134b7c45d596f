package scheduler

import (
	"testing"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
)

func newScheduler(t testing.TB, cfg Config, b *bank.Bank) *Scheduler {
	t.Helper()
	s, err := New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// drain runs s until nothing is buffered or executing, ending slots when
// nothing more fits in the current one.
func drain(t testing.TB, s *Scheduler) {
	t.Helper()
	if err := NewDriver(s, DriverConfig{}).Drain(); err != nil {
		t.Fatal(err)
	}
}

// endSlot ends the working slot, waiting for work in flight.
func endSlot(t testing.TB, s *Scheduler) {
	t.Helper()
	if err := NewDriver(s, DriverConfig{}).EndSlot(); err != nil {
		t.Fatal(err)
	}
}

// checkAccounting asserts Received == sum(Outcomes) + Buffered.
func checkAccounting(t testing.TB, s *Scheduler) {
	t.Helper()
	if st := s.Stats(); st.Check() != nil {
		t.Fatal(st.Check())
	}
}

func lamports(b *bank.Bank, k banking.Pubkey) uint64 {
	a, _ := b.Account(k)
	return a.Lamports
}
