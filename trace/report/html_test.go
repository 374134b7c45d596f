package report

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"
)

// TestWriteHTML checks the page's structure without a browser (the
// browser test in cmd/tpu loads it): one figure per chart with its id,
// each holding one SVG; every hop named in the CDF's legend; a waterfall
// per slowest tracer with a bar label per interval; and nothing that
// loads from elsewhere or runs.
func TestWriteHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, twoTraces(), "summary <text>", Config{Slowest: 2}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	figures := regexp.MustCompile(`(?s)<figure id="([^"]+)">(.*?)</figure>`).FindAllStringSubmatch(page, -1)
	var ids []string
	body := map[string]string{}
	for _, f := range figures {
		ids = append(ids, f[1])
		body[f[1]] = f[2]
		if n := strings.Count(f[2], "<svg"); n != 1 {
			t.Errorf("figure %s holds %d SVGs", f[1], n)
		}
	}
	want := []string{IDCDF, IDThroughput, IDP99, IDShare, WaterfallID(1), WaterfallID(2)}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("figures %v, want %v", ids, want)
	}
	for _, h := range []string{"fetch (2)", "sigverify (2)", "exec (2)"} {
		if !strings.Contains(body[IDCDF], "</span>"+h+"</li>") {
			t.Errorf("CDF legend lacks %q", h)
		}
	}
	if !strings.Contains(body[IDShare], "between hops 30.0%") || !strings.Contains(body[IDShare], "sigverify 30.0%") {
		t.Errorf("share chart lacks its labels")
	}
	for _, l := range []string{"received -&gt; verified (28µs)", "verified -&gt; executed (20µs)"} {
		if !strings.Contains(body[WaterfallID(1)], l) {
			t.Errorf("waterfall 1 lacks %q", l)
		}
	}
	if !strings.Contains(body[WaterfallID(2)], "received -&gt; verified (35µs)") {
		t.Errorf("waterfall 2 (tracer y) lacks its bar")
	}
	if !regexp.MustCompile(`(?s)<details>\s*<summary>[^<]*</summary>\s*<pre id="summary">summary &lt;text&gt;</pre>\s*</details>\s*</body>`).MatchString(page) {
		t.Errorf("summary not escaped into the page, folded, last")
	}
	if strings.Contains(page, "slowest slowest") || !strings.Contains(page, "The slowest of 3 tracer packets") || !strings.Contains(page, "The 2nd slowest of 3") {
		t.Errorf("waterfall captions do not say which slowest of how many")
	}
	// No tracer is followed to its execution here: the page says so
	// first, and draws no segment chart.
	if !regexp.MustCompile(`<h1>[^<]*</h1>\s*<p id="answer">No tracer packet followed`).MatchString(page) {
		t.Errorf("the page does not open with the missing answer")
	}
	for _, bad := range []string{"<script", "src=", "href=", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	if strings.Contains(page, "<?xml") {
		t.Errorf("page holds an XML prolog")
	}
}

// TestWriteHTMLNoTracers: a trace without tracer packets gets the four
// charts and says why there is no waterfall.
func TestWriteHTMLNoTracers(t *testing.T) {
	spans := twoTraces()
	for i := range spans {
		spans[i].Events = nil
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, spans, "", Config{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "<figure "); n != 4 || !strings.Contains(b.String(), `id="no-tracers"`) {
		t.Errorf("%d figures, no-tracers note %v", n, strings.Contains(b.String(), "no-tracers"))
	}
}

// TestWriteHTMLStageCPU: Config.StageCPU adds the CPU by stage chart
// before the hops' charts, with a bar and a legend entry per stage that
// give the figures as given, and their total in the caption; a figure
// that is not a finite non-negative number is refused.
func TestWriteHTMLStageCPU(t *testing.T) {
	stages := []StageCPU{{"fetch", 3.25, 0.1}, {"sigverify", 17.5, 0.54}, {"banking", 6, 0.185}, {"rest", 5.75, 0.175}}
	var b bytes.Buffer
	if err := WriteHTML(&b, twoTraces(), "", Config{Slowest: 1, StageCPU: stages}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	figures := regexp.MustCompile(`(?s)<figure id="([^"]+)">(.*?)</figure>`).FindAllStringSubmatch(page, -1)
	var ids []string
	var body string
	for _, f := range figures {
		ids = append(ids, f[1])
		if f[1] == IDStageCPU {
			body = f[2]
		}
	}
	want := []string{IDStageCPU, IDCDF, IDThroughput, IDP99, IDShare, WaterfallID(1)}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("figures %v, want %v", ids, want)
	}
	if !strings.Contains(body, "32.50 us in all") {
		t.Errorf("the caption does not give the total, 32.50 us")
	}
	legend := regexp.MustCompile(`<li><span class="sw"[^>]*></span>([^<]*)</li>`).FindAllStringSubmatch(body, -1)
	wantLegend := []string{"fetch 3.25 us (10.0%)", "sigverify 17.50 us (54.0%)", "banking 6.00 us (18.5%)", "rest 5.75 us (17.5%)"}
	if len(legend) != len(wantLegend) {
		t.Fatalf("legend %q, want %q", legend, wantLegend)
	}
	for i, l := range legend {
		if l[1] != wantLegend[i] {
			t.Errorf("legend %d: %q, want %q", i, l[1], wantLegend[i])
		}
		// The bar's axis label says the same.
		if !strings.Contains(body, ">"+wantLegend[i]+"</text>") {
			t.Errorf("no axis label %q", wantLegend[i])
		}
	}
	if n := strings.Count(body, "<path"); n < len(stages) {
		t.Errorf("%d paths drawn for %d bars", n, len(stages))
	}

	for _, bad := range []StageCPU{{"fetch", math.NaN(), 0}, {"fetch", -1, 0}, {"fetch", 1, math.Inf(1)}} {
		if err := WriteHTML(&b, twoTraces(), "", Config{StageCPU: []StageCPU{bad}}); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
