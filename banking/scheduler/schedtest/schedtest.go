// Package schedtest drives a scheduler in the tests of the packages
// below it (the ledger's and the bank's external tests): each call fails
// the test on an error. Only tests import it.
package schedtest

import (
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/scheduler"
)

// New starts a scheduler over b, closed when the test ends.
func New(t testing.TB, cfg scheduler.Config, b *bank.Bank) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Drain runs s until nothing is buffered or executing, ending slots when
// nothing more fits in the current one.
func Drain(t testing.TB, s *scheduler.Scheduler) {
	t.Helper()
	if err := scheduler.NewDriver(s, scheduler.DriverConfig{}).Drain(); err != nil {
		t.Fatal(err)
	}
}

// EndSlot ends the working slot, waiting for work in flight.
func EndSlot(t testing.TB, s *scheduler.Scheduler) {
	t.Helper()
	if err := scheduler.NewDriver(s, scheduler.DriverConfig{}).EndSlot(); err != nil {
		t.Fatal(err)
	}
}
