package trace

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// histBound is the accuracy Histogram's doc promises: a quantile is
// within 1/64 of the true value. A value x in bucket [lo, hi), whose
// width is lo/32 at most, is reported as the midpoint (lo+hi)/2, at most
// lo/64 from x either way, and lo <= x. (Truncating the midpoint to whole
// nanoseconds keeps it so: buckets under 32 ns hold one integer each.)
const histBound = 1.0 / 64

// TestHistogramErrorIsTheDocumentedBound: the exported bound is the one
// the doc comment states and these tests assert.
func TestHistogramErrorIsTheDocumentedBound(t *testing.T) {
	if HistogramError != histBound {
		t.Fatalf("HistogramError = %v, the doc and the tests say %v", HistogramError, histBound)
	}
}

// histValues are values across the histogram's whole range: every
// nanosecond count up to 4096 (where buckets are a nanosecond or a few
// wide), then steps of about 0.3% up to the top of the range, each with
// its neighbours; in order.
func histValues() []uint64 {
	var vs []uint64
	for x := uint64(1); x <= 4096; x++ {
		vs = append(vs, x)
	}
	for x := 4096.0; x < 1<<40; x *= 1.003 {
		n := uint64(x)
		vs = append(vs, n-1, n, n+1)
	}
	vs = append(vs, 1<<40-1)
	slices.Sort(vs)
	return slices.Compact(vs)
}

// TestBucketBounds: every value falls in the bucket whose bounds hold it,
// and buckets only grow with the value.
func TestBucketBounds(t *testing.T) {
	prev := 0
	for _, x := range histValues() {
		b := bucket(x)
		if lo, hi := lower(b), lower(b+1); float64(x) < lo || float64(x) >= hi {
			t.Fatalf("%d ns in bucket %d, [%.2f, %.2f)", x, b, lo, hi)
		}
		if b < prev {
			t.Fatalf("%d ns in bucket %d, below the bucket %d of a smaller value", x, b, prev)
		}
		prev = b
	}
	if b := bucket(1<<40 - 1); b != histBuckets-1 {
		t.Fatalf("2^40-1 ns in bucket %d, want the last, %d", b, histBuckets-1)
	}
	if b := bucket(1 << 50); b != histBuckets-1 {
		t.Fatalf("2^50 ns in bucket %d, want the last (clamped)", b)
	}
}

// TestQuantileOfEachValue: for every value in the range, the estimate of
// the quantile that falls on it is within the bound. A far larger value
// is recorded too, so that the cap at the maximum does not hide the
// bucket's error.
func TestQuantileOfEachValue(t *testing.T) {
	worst, at := 0.0, uint64(0)
	for _, x := range histValues() {
		var h Histogram
		h.Record(time.Duration(x))
		h.Record(time.Duration(1) << 41)
		got := h.Quantile(0.5)
		if e := relErr(got, time.Duration(x)); e > worst {
			worst, at = e, x
		}
	}
	if worst > histBound {
		t.Fatalf("relative error %.4f at %d ns, want at most %.4f", worst, at, histBound)
	}
	t.Logf("worst relative error %.4f, at %d ns", worst, at)
}

// TestQuantileAccuracy records known distributions and checks every
// quantile's estimate against the exact one (the nearest rank: the
// ceil(q*n)-th smallest observation, as Quantile defines it).
func TestQuantileAccuracy(t *testing.T) {
	for _, c := range histDistributions() {
		t.Run(c.name, func(t *testing.T) {
			var h Histogram
			for _, v := range c.values {
				h.Record(v)
			}
			if worst, q := worstError(c.values, h.Quantile); worst > histBound {
				t.Errorf("q=%v: relative error %.4f, want at most %.4f", q, worst, histBound)
			}
		})
	}
}

// TestQuantileAccuracyCatchesWrongBuckets: the check above fails an
// estimator whose buckets are wrong. Each wrong estimator reads the
// quantile's exact value and answers as a broken histogram would.
func TestQuantileAccuracyCatchesWrongBuckets(t *testing.T) {
	wrong := map[string]func(x float64) float64{
		// One bucket per power of two: midpoint of [2^e, 2^(e+1)).
		"power-of-two buckets": func(x float64) float64 {
			e := bits.Len64(uint64(x)) - 1
			return math.Ldexp(1.5, e)
		},
		// The right buckets, off by one.
		"next bucket": func(x float64) float64 {
			b := bucket(uint64(x)) + 1
			return (lower(b) + lower(b+1)) / 2
		},
		// The bucket's lower bound rather than its midpoint: up to 1/32
		// low (exact on values at the bottom of their bucket).
		"lower bound": func(x float64) float64 {
			return lower(bucket(uint64(x)))
		},
		// Half as many sub-buckets (16 per power of two): up to 1/32 off.
		"16 sub-buckets": func(x float64) float64 {
			e := bits.Len64(uint64(x)) - 1
			w := math.Ldexp(1, e) / 16
			lo := math.Ldexp(1, e) + math.Floor((x-math.Ldexp(1, e))/w)*w
			return lo + w/2
		},
	}
	for name, est := range wrong {
		caught := 0
		for _, c := range histDistributions() {
			exact := slices.Clone(c.values)
			slices.Sort(exact)
			quantile := func(q float64) time.Duration {
				return time.Duration(est(float64(exact[nearestRank(q, len(exact))])))
			}
			if worst, _ := worstError(c.values, quantile); worst > histBound {
				caught++
			} else if !strings.HasPrefix(c.name, "bucket-") {
				// The random samples spread over whole buckets: each
				// wrong estimator must fail on every one of them.
				t.Errorf("%s, %s: relative error %.4f passes the bound %.4f", c.name, name, worst, histBound)
			}
		}
		if caught == 0 {
			t.Errorf("%s passes the bound on every distribution", name)
		}
	}
}

type histDistribution struct {
	name   string
	values []time.Duration
}

// histDistributions are uniform, exponential and log-uniform samples
// (fixed seeds), fixed values a decade or more apart, and adversarial
// ones: every value at the top or the bottom of its bucket (where the
// midpoint is farthest), and a heavy tail of a few huge values over
// many small ones.
func histDistributions() []histDistribution {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 100_000
	uniform := make([]time.Duration, n)
	exponential := make([]time.Duration, n)
	logUniform := make([]time.Duration, n)
	for i := range n {
		uniform[i] = time.Microsecond + time.Duration(rng.Int64N(int64(10*time.Millisecond)))
		exponential[i] = max(1, time.Duration(rng.ExpFloat64()*float64(time.Millisecond)))
		logUniform[i] = time.Duration(math.Exp(rng.Float64() * math.Log(float64(10*time.Minute))))
	}
	var fixed []time.Duration
	for _, v := range []time.Duration{37, 1200, 45 * time.Microsecond, 3300 * time.Microsecond, 800 * time.Millisecond, 70 * time.Second} {
		for range 1000 {
			fixed = append(fixed, v)
		}
	}
	var tops, bottoms []time.Duration
	for b := 0; b < histBuckets-1; b++ {
		lo, hi := math.Ceil(lower(b)), math.Ceil(lower(b+1))-1 // the integers in the bucket
		if lo > hi {
			continue // a bucket under 32 ns with no integer in it
		}
		tops = append(tops, time.Duration(hi))
		bottoms = append(bottoms, time.Duration(lo))
	}
	heavy := make([]time.Duration, 0, n)
	for i := range n {
		if i%1000 == 999 {
			heavy = append(heavy, time.Duration(rng.Int64N(int64(time.Minute))))
		} else {
			heavy = append(heavy, 1+time.Duration(rng.Int64N(2000)))
		}
	}
	return []histDistribution{
		{"bucket-tops", tops},
		{"bucket-bottoms", bottoms},
		{"heavy-tail", heavy},
		{"uniform-1us-10ms", uniform},
		{"exponential-mean-1ms", exponential},
		{"log-uniform-1ns-10min", logUniform},
		{"fixed-across-decades", fixed},
	}
}

// histQuantiles are the quantiles checked: the tails, and every
// percentile.
func histQuantiles() []float64 {
	qs := []float64{0.0001, 0.001, 0.999, 0.9999, 1}
	for p := 1; p < 100; p++ {
		qs = append(qs, float64(p)/100)
	}
	return qs
}

// worstError returns the largest relative error of quantile against the
// exact quantiles of values, and the quantile where it is.
func worstError(values []time.Duration, quantile func(float64) time.Duration) (float64, float64) {
	exact := slices.Clone(values)
	slices.Sort(exact)
	worst, at := 0.0, 0.0
	for _, q := range histQuantiles() {
		want := exact[nearestRank(q, len(exact))]
		if e := relErr(quantile(q), want); e > worst {
			worst, at = e, q
		}
	}
	return worst, at
}

// nearestRank returns the index in sorted order of the q-quantile of n
// values: the ceil(q*n)-th smallest.
func nearestRank(q float64, n int) int {
	return max(int(math.Ceil(q*float64(n))), 1) - 1
}

func relErr(got, want time.Duration) float64 {
	if want == 0 {
		if got == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(float64(got-want)) / float64(want)
}

// TestMaxExact: Max is the largest observation, to the nanosecond, and
// the top quantile never exceeds it.
func TestMaxExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h Histogram
	var want time.Duration
	for range 10_000 {
		v := time.Duration(rng.Int64N(int64(time.Second)))
		want = max(want, v)
		h.Record(v)
	}
	if got := h.Max(); got != want {
		t.Fatalf("Max %v, want %v", got, want)
	}
	if q := h.Quantile(1); q > want || relErr(q, want) > histBound {
		t.Fatalf("Quantile(1) %v, max %v", q, want)
	}
}

// TestRecordAllocs: Record allocates nothing.
func TestRecordAllocs(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(1000, func() { h.Record(1234 * time.Microsecond) }); n != 0 {
		t.Fatalf("Record: %v allocations", n)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	b.ReportAllocs()
	var h Histogram
	for i := 0; b.Loop(); i++ {
		h.Record(time.Duration(i&0xffff) * time.Microsecond)
	}
}
