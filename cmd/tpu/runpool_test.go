package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestPoolWarmSummary: the summary's packet pool figures are the pool's.
// Warm makes batches until --pool-warm are idle; a fetch reader that
// takes its first batch from the idle list meanwhile (they start with
// the graph, and warming runs beside the signing) makes it make one more,
// so at least --pool-warm are warmed, and at most that plus the most out
// at once. A batch is allocated only when none is idle, and the pool
// keeps every released one up to the memory bound, so those allocated
// beyond the warmed number at least the most out at once less the
// warmed, and at most the most out at once; without warming, exactly
// that.
func TestPoolWarmSummary(t *testing.T) {
	for _, warm := range []uint64{0, 4} {
		s, out, _, _ := runInProcess(t, "--duration", "1s", "--rate", "3000", "--accounts", "256", "--pool-warm", fmt.Sprint(warm))
		p := s.Pool
		if p == nil {
			t.Fatalf("no pool in the summary:\n%s", out)
		}
		if p.Warmed < warm || p.Warmed > warm+p.Peak {
			t.Errorf("--pool-warm %d: warmed %d, with at most %d out at once", warm, p.Warmed, p.Peak)
		}
		if p.Peak == 0 || p.Allocated+p.Warmed < p.Peak || p.Allocated > p.Peak {
			t.Errorf("--pool-warm %d: allocated %d beyond the %d warmed, with at most %d out at once", warm, p.Allocated, p.Warmed, p.Peak)
		}
		if want := fmt.Sprintf("packet pool: %d batches warmed before the load, %d allocated beyond them", p.Warmed, p.Allocated); !strings.Contains(out, want) {
			t.Errorf("the summary does not print the pool (%q):\n%s", want, out)
		}
	}
}
