package report

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/trace"
)

// pipeline returns one tracer sig's spans through the five hops, its
// instants (received, fetch end, sigverify start, verified, sigverify
// end, schedule start, buffered, scheduled, execute start, executed,
// committed) at base + at[i] microseconds.
func pipeline(sig string, base int, at [11]int) []trace.SpanRecord {
	u := func(i int) int { return base + at[i] }
	return []trace.SpanRecord{
		span(sig, sig+"1", "fetch", u(0), u(1), step("received", sig, u(0))),
		span(sig, sig+"2", "sigverify", u(2), u(4), step("verified", sig, u(3))),
		span(sig, sig+"3", "banking.schedule", u(5), u(6), step("buffered", sig, u(6))),
		span(sig, sig+"4", "banking.execute", u(8), u(9), step("scheduled", sig, u(7)), step("execute_start", sig, u(8)), step("executed", sig, u(9))),
		span(sig+"c", sig+"5", "banking.commit", u(9), u(10), step("committed", sig, u(10))),
	}
}

// TestWriteHTMLSegments: with tracers followed end to end, the page
// opens with the answer, then the end-to-end CDF beside the segments'
// stacked bar (a legend entry per segment whose shares add up to 100%),
// then the segments' CDFs and p99 over time, then the hop charts.
func TestWriteHTMLSegments(t *testing.T) {
	var spans []trace.SpanRecord
	for i := range 20 {
		// Buffered 1000 us of 1045 to executed, 1055 to committed.
		spans = append(spans, pipeline(fmt.Sprintf("t%02d", i), 100*i, [11]int{0, 1, 3, 6, 10, 15, 21, 1021, 1030, 1045, 1055})...)
	}
	// Empty slots' commits while the load was signed, long before it.
	spans = append(spans, span("idle", "idle", "banking.commit", -900000, -899000))
	var b bytes.Buffer
	if err := WriteHTML(&b, spans, "text", Config{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	ids := regexp.MustCompile(`<figure id="([^"]+)">`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, m := range ids {
		got = append(got, m[1])
	}
	want := []string{IDE2E, IDSegments, IDSegmentCDF, IDSegmentTime, IDCDF, IDThroughput, IDP99, IDShare}
	for i := 1; i <= DefaultSlowest; i++ {
		want = append(want, WaterfallID(i))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("figures %v, want %v", got, want)
	}
	if !regexp.MustCompile(`<h1>[^<]*</h1>\s*<p id="answer">20 tracer packets: socket to executed p50 1.05ms, p99 1.05ms; to committed p50 1.06ms, p99 1.06ms; 94.8% buffered until scheduled\.</p>\s*<div class="row">\s*<figure id="e2e">`).MatchString(page) {
		t.Errorf("the page does not open with the answer, then the end-to-end CDF:\n%.1500s", page[strings.Index(page, "<h1>"):])
	}
	seg := regexp.MustCompile(`(?s)<figure id="segments">.*?</figure>`).FindString(page)
	items := regexp.MustCompile(`</span>([^<]*?) ([0-9.]+)% \(p50`).FindAllStringSubmatch(seg, -1)
	if len(items) != trace.NumSegments {
		t.Fatalf("%d segments in the legend, want %d: %s", len(items), trace.NumSegments, seg)
	}
	var sum float64
	for i, m := range items {
		v, _ := strconv.ParseFloat(m[2], 64)
		sum += v
		if m[1] != trace.Segments[i].Label {
			t.Errorf("legend entry %d is %q, want %q", i, m[1], trace.Segments[i].Label)
		}
	}
	if math.Abs(sum-100) > 0.05*trace.NumSegments {
		t.Errorf("the shares add up to %.1f%%", sum)
	}
	if !strings.Contains(page, "socket to executed (20): p50 1.05ms") || !strings.Contains(page, "socket to committed (20)") {
		t.Errorf("the end-to-end legend lacks its series")
	}
	d, _ := Compute(spans, Config{})
	if !d.First.Equal(at(0)) || len(d.Bins) != 1 {
		t.Errorf("first packet %v, %d bins: want %v, 1 (the idle commit left out)", d.First, len(d.Bins), at(0))
	}
}

func TestClipTop(t *testing.T) {
	for _, c := range []struct {
		ys      []float64
		top     float64
		clipped bool
	}{
		{nil, 0, false},
		{[]float64{1, 2, 3}, 3, false},
		{[]float64{0, 0, 0}, 0, false},
		{append(make([]float64, 40), 10), 10, false}, // p95 0: nothing to scale against
		{append([]float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, 100), 3, true},
		{append([]float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, 4), 4, false},
	} {
		top, clipped := clipTop(c.ys)
		if top != c.top || clipped != c.clipped {
			t.Errorf("clipTop(%v) = %v, %v; want %v, %v", c.ys, top, clipped, c.top, c.clipped)
		}
	}
}

// TestOverTimeClips: a spike 50 times the rest stops the y-axis at 1.5
// times the 95th percentile, and the note says what ran off.
func TestOverTimeClips(t *testing.T) {
	d := Data{Hops: []string{"fetch"}, Bin: time.Second}
	for i := range 30 {
		n := 10
		if i == 7 {
			n = 500
		}
		d.Bins = append(d.Bins, Bin{Items: map[string]int{"fetch": n}})
	}
	c, err := throughputPlot(d)
	if err != nil {
		t.Fatal(err)
	}
	if c.p.Y.Max != 15 || c.note != "The y-axis stops at 15 packets/s: 1 points above it (up to 500 packets/s) are drawn as triangles on its top edge." {
		t.Errorf("y max %v, note %q", c.p.Y.Max, c.note)
	}
}
