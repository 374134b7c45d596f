package trace_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tpugo/tpu/trace"
)

// wantBounds are the hop histograms' bucket bounds in seconds: 1-2-5
// steps from 1 us to 10 s.
var wantBounds = []float64{
	0.000001, 0.000002, 0.000005,
	0.00001, 0.00002, 0.00005,
	0.0001, 0.0002, 0.0005,
	0.001, 0.002, 0.005,
	0.01, 0.02, 0.05,
	0.1, 0.2, 0.5,
	1, 2, 5,
	10,
}

// hopDurations land one to a bucket; the bucket holds values above the
// bound before it up to and including its own (2 s is on a bound).
var hopDurations = []struct {
	d     time.Duration
	upper float64 // the bound of the bucket it lands in
}{
	{3 * time.Microsecond, 0.000005},
	{700 * time.Microsecond, 0.001},
	{40 * time.Millisecond, 0.05},
	{2 * time.Second, 2},
}

// TestHopHistogramBuckets records known durations through a Hop as both
// queue wait and service time, collects them with a manual reader, and
// finds each in its own bucket with the expected bounds; recording costs
// no allocation once the hop's series exist.
func TestHopHistogramBuckets(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	p, err := trace.Setup(context.Background(), trace.Config{MetricReader: reader})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	h := p.Hop("sigverify")
	for _, tc := range hopDurations {
		h.Record(tc.d, tc.d)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "tpu.hop.queue_wait" && m.Name != "tpu.hop.service" {
				continue
			}
			seen++
			d, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || len(d.DataPoints) != 1 {
				t.Fatalf("%s: %T with %v, want one explicit-bucket histogram point", m.Name, m.Data, m.Data)
			}
			dp := d.DataPoints[0]
			if !slices.Equal(dp.Bounds, wantBounds) {
				t.Fatalf("%s bounds %v, want %v", m.Name, dp.Bounds, wantBounds)
			}
			want := make([]uint64, len(wantBounds)+1)
			for _, tc := range hopDurations {
				want[slices.Index(wantBounds, tc.upper)]++
			}
			if !slices.Equal(dp.BucketCounts, want) {
				t.Errorf("%s bucket counts %v, want %v (bounds %v)", m.Name, dp.BucketCounts, want, wantBounds)
			}
			if dp.Count != uint64(len(hopDurations)) {
				t.Errorf("%s count %d, want %d", m.Name, dp.Count, len(hopDurations))
			}
		}
	}
	if seen != 2 {
		t.Fatalf("collected %d hop histograms, want 2", seen)
	}

	allocs := testing.AllocsPerRun(100, func() { h.Record(700*time.Microsecond, 40*time.Millisecond) })
	if allocs != 0 {
		t.Errorf("%.1f allocations per Hop.Record with a metric reader, want 0", allocs)
	}
}

// TestServeMetricsBuckets scrapes the same durations from /metrics in the
// text format: the bucket lines carry the bounds, and the cumulative
// counts step by one at each duration's bucket.
func TestServeMetricsBuckets(t *testing.T) {
	p, err := trace.Setup(context.Background(), trace.Config{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	h := p.Hop("sigverify")
	for _, tc := range hopDurations {
		h.Record(tc.d, tc.d)
	}
	resp, err := http.Get(p.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, name := range []string{"tpu_hop_queue_wait_seconds_bucket{", "tpu_hop_service_seconds_bucket{"} {
		cum := 0
		for _, bound := range wantBounds {
			for _, tc := range hopDurations {
				if tc.upper == bound {
					cum++
				}
			}
			le := fmt.Sprintf(`le="%v"`, bound) // as the text format writes it: 1e-06, 0.0001, 2
			if !hasSample(body, name, le, fmt.Sprint(cum)) {
				t.Errorf("no %s%s} %d line in:\n%s", name, le, cum, grepLines(body, name))
			}
		}
		if !hasSample(body, name, `le="+Inf"`, fmt.Sprint(len(hopDurations))) {
			t.Errorf("no %sle=\"+Inf\"} %d line in:\n%s", name, len(hopDurations), grepLines(body, name))
		}
	}
}

func grepLines(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
