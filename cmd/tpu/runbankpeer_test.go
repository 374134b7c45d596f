package main

import (
	"math"
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

// The ratio states its error from the profiles' sampling: one standard
// error of two counts, sqrt(1/run + 1/bench), relative.
func TestBankingPeerSamplingErr(t *testing.T) {
	p := &bankingPeer{Iterations: 5, USPerTx: 2, Samples: 400}
	p.compare(stageFigure{USPerTx: 3, Samples: 100})
	if want := math.Sqrt(1.0/100 + 1.0/400); math.Abs(p.RatioSamplingErr-want) > 1e-12 {
		t.Errorf("sampling error %v, want %v", p.RatioSamplingErr, want)
	}
	var b strings.Builder
	p.print(&b)
	if want := "1.50x (+-11%: the profiles' sampling alone, 100 and 400 samples)"; !strings.Contains(b.String(), want) {
		t.Errorf("printed %q, want %q in it", b.String(), want)
	}
	q := &bankingPeer{Iterations: 5, USPerTx: 2, Samples: 400}
	q.compare(stageFigure{USPerTx: 3})
	if q.RatioSamplingErr != 0 {
		t.Errorf("no ratio, sampling error %v", q.RatioSamplingErr)
	}
}

// The bench before the load gives its own ratio, printed beside the
// main one; a cold bench without samples gives none, and no line.
func TestBankingPeerCold(t *testing.T) {
	after := &benchFigure{Iterations: 10, Transactions: 1000, USPerTx: 2, Samples: 40}
	for _, tc := range []struct {
		cold  *benchFigure
		ratio float64
	}{
		{&benchFigure{Iterations: 5, Transactions: 500, USPerTx: 2.5, Samples: 25}, 1.2},
		{&benchFigure{Iterations: 5, Transactions: 500}, 0},
		{nil, 0},
	} {
		p := newBankingPeer(after, tc.cold)
		p.compare(stageFigure{USPerTx: 3, Samples: 50})
		if p.Ratio != 1.5 || p.USPerTx != 2 || p.Iterations != 10 || p.Samples != 40 || math.Abs(p.ColdRatio-tc.ratio) > 1e-9 {
			t.Errorf("cold %+v: %+v, want ratio 1.5 and cold ratio %v", tc.cold, p, tc.ratio)
		}
		var b strings.Builder
		p.print(&b)
		if got := strings.Contains(b.String(), "before the load"); got != (tc.ratio > 0) || tc.ratio > 0 && !strings.Contains(b.String(), "2.50 in the bench, 1.20x") {
			t.Errorf("cold %+v: printed %q", tc.cold, b.String())
		}
	}
}
