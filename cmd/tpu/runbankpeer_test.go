package main

import (
	"strings"
	"testing"
)

// A side with no profile sample gives no ratio, and the line says which
// side lacked them, rather than a ratio of 0 or of infinity.
func TestBankingPeerNoSamples(t *testing.T) {
	for _, tc := range []struct {
		run, bench int64
		ratio      float64
	}{
		{run: 40, bench: 200, ratio: 1.5},
		{run: 0, bench: 200},
		{run: 40, bench: 0},
	} {
		p := &bankingPeer{Iterations: 5, USPerTx: 2, Samples: tc.bench}
		p.compare(stageFigure{USPerTx: 3, Samples: tc.run})
		if p.Ratio != tc.ratio || p.RunUSPerTx != 3 || p.RunSamples != tc.run {
			t.Errorf("run %d, bench %d samples: %+v, want ratio %v", tc.run, tc.bench, p, tc.ratio)
		}
		var b strings.Builder
		p.print(&b)
		if noRatio := strings.Contains(b.String(), "no ratio"); noRatio != (tc.ratio == 0) {
			t.Errorf("run %d, bench %d samples: printed %q", tc.run, tc.bench, b.String())
		}
	}
}
