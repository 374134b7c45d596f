package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestPoolWarmSummary: the summary's packet pool figures are the pool's.
// A batch is allocated only when none is idle, and the pool keeps every
// released one up to the memory bound, so those allocated beyond the
// warmed number at least the most out at once less the warmed, and at
// most the most out at once; without warming, exactly that.
func TestPoolWarmSummary(t *testing.T) {
	for _, warm := range []uint64{0, 4} {
		s, out, _, _ := runInProcess(t, "--duration", "1s", "--rate", "3000", "--accounts", "256", "--pool-warm", fmt.Sprint(warm))
		p := s.Pool
		if p == nil {
			t.Fatalf("no pool in the summary:\n%s", out)
		}
		if p.Warmed != warm {
			t.Errorf("warmed %d, want %d", p.Warmed, warm)
		}
		if p.Peak == 0 || p.Allocated+warm < p.Peak || p.Allocated > p.Peak {
			t.Errorf("--pool-warm %d: allocated %d beyond the warmed, with at most %d out at once", warm, p.Allocated, p.Peak)
		}
		if want := fmt.Sprintf("packet pool: %d batches warmed before the load, %d allocated beyond them", warm, p.Allocated); !strings.Contains(out, want) {
			t.Errorf("the summary does not print the pool (%q):\n%s", want, out)
		}
	}
}
