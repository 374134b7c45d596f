package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/trace/report"
)

// findBrowser returns the path of a Chromium-family browser, or "" if
// none is installed. Without one, a browser test skips, unless
// TPU_REQUIRE_BROWSER=1 (set by .ci/run, which installs Debian's
// chromium), when it fails.
func findBrowser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("TPU_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium on PATH and TPU_REQUIRE_BROWSER=1 (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH: the HTML report is not checked in a browser (apt-get install chromium; TPU_REQUIRE_BROWSER=1 makes this a failure)")
	return ""
}

// chart is what the browser reports of one figure of the page.
type chart struct {
	ID    string   `json:"id"`
	Title string   `json:"title"`
	SVGs  int      `json:"svgs"`
	W     float64  `json:"w"`
	H     float64  `json:"h"`
	Drawn int      `json:"drawn"` // path elements with a length > 0
	Texts []string `json:"texts"` // the SVG's and the legend's
	// Legend is the HTML legend's entries; Overlaps whether the legend's
	// box overlaps the SVG's.
	Legend   []string `json:"legend"`
	Overlaps bool     `json:"overlaps"`
}

const chartsJS = `Array.from(document.querySelectorAll('figure')).map(f => {
  const svg = f.querySelector('svg');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  return {
    id: f.id,
    title: (f.querySelector('figcaption h2') || {textContent: ''}).textContent,
    svgs: f.querySelectorAll('svg').length,
    w: box.width, h: box.height,
    drawn: Array.from(f.querySelectorAll('svg path')).filter(p => p.getTotalLength() > 0).length,
    texts: Array.from(f.querySelectorAll('svg text, .legend li')).map(t => t.textContent),
    legend: Array.from(f.querySelectorAll('.legend li')).map(t => t.textContent),
    overlaps: Array.from(f.querySelectorAll('.legend')).some(l => {
      const r = l.getBoundingClientRect();
      return r.top < box.bottom && r.bottom > box.top && r.left < box.right && r.right > box.left;
    }),
  };
})`

// pageJS reads what the page says first and last: the answer's text,
// whether it comes right after the heading, and whether the text summary
// is folded at the end.
const pageJS = `({
  answer: (document.getElementById('answer') || {textContent: ''}).textContent,
  first: !!document.querySelector('h1 + p#answer'),
  folded: !!document.querySelector('body > details:last-child > pre#summary'),
})`

// pageTop is pageJS's result.
type pageTop struct {
	Answer string `json:"answer"`
	First  bool   `json:"first"`
	Folded bool   `json:"folded"`
}

// expected derives from the trace file itself what the page must show:
// the hop names, how many tracer packets have two steps or more, and
// how many are followed from the socket to their execution.
func expected(t *testing.T, traceFile string) (hops []string, tracers, complete int) {
	f, err := os.Open(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spans, err := trace.ReadSpans(f)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	steps := map[string]int{}
	for _, s := range spans {
		names[s.Name] = true
		for _, e := range s.Events {
			if strings.HasPrefix(e.Name, "tracer.") {
				sig, _ := e.Attributes[trace.TracerSigKey].(string)
				steps[sig]++
			}
		}
	}
	for n := range names {
		hops = append(hops, n)
	}
	sort.Strings(hops)
	for _, n := range steps {
		if n >= 2 {
			tracers++
		}
	}
	ts, _ := trace.BreakDown(spans)
	return hops, tracers, len(ts)
}

// checkPage loads the HTML report page in headless Chromium from a
// file:// URL and checks that nothing failed (no console error, no
// uncaught exception, no error in the browser's log, no request outside
// the file itself) and that every chart is drawn with its series: the
// CDF, throughput and p99 charts name every hop of the trace in their
// legends and draw a line per hop; the share chart a bar per hop and
// one between them; a waterfall per slow tracer (at most slowest) with
// a labelled bar per interval between steps; with stageCPU (the
// summary's figures, as its legend must give them) the CPU by stage chart,
// a bar per stage.
func checkPage(t *testing.T, page, traceFile string, slowest int, stageCPU []string) {
	browser := findBrowser(t)
	hops, withSteps, complete := expected(t, traceFile)
	waterfalls := min(withSteps, slowest)

	var mu sync.Mutex
	var problems, requests []string
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				problems = append(problems, fmt.Sprintf("log error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		}
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.UserDataDir(t.TempDir()))...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(listen))
	defer cancel()
	// The first Run starts the browser, which lives as long as ctx: the
	// timeout goes on a child context of a started browser.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	runCtx, cancelRun := context.WithTimeout(ctx, 30*time.Second)
	defer cancelRun()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + abs
	if err := chromedp.Do(runCtx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	charts, err := chromedp.Run(runCtx, chromedp.Evaluate[[]chart](chartsJS))
	if err != nil {
		t.Fatalf("reading the charts: %v", err)
	}
	top, err := chromedp.Run(runCtx, chromedp.Evaluate[pageTop](pageJS))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	// Console and log events arrive asynchronously; a round trip after
	// the evaluation lets those of the load through before they are read.
	if _, err := chromedp.Run(runCtx, chromedp.Evaluate[int](`1`)); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	for _, p := range problems {
		t.Errorf("browser: %s", p)
	}
	for _, r := range requests {
		if r != url {
			t.Errorf("the page requested %s: it must load nothing but itself", r)
		}
	}
	mu.Unlock()

	byID := map[string]chart{}
	var ids []string
	for _, c := range charts {
		byID[c.ID] = c
		ids = append(ids, c.ID)
		if c.SVGs != 1 || c.W < 100 || c.H < 100 || c.Title == "" {
			t.Errorf("chart %q (%q): %d SVGs of %.0fx%.0f px", c.ID, c.Title, c.SVGs, c.W, c.H)
		}
		if c.Drawn == 0 {
			t.Errorf("chart %q is empty: nothing drawn", c.ID)
		}
		if c.Overlaps {
			t.Errorf("chart %q: its legend overlaps the plot", c.ID)
		}
	}
	if !top.First || !top.Folded {
		t.Errorf("the answer is not first (%v) or the text summary not folded last (%v)", top.First, top.Folded)
	}
	var want []string
	if complete > 0 {
		if wantAnswer := fmt.Sprintf("%d tracer packets: socket to executed p50 ", complete); !strings.HasPrefix(top.Answer, wantAnswer) {
			t.Errorf("the page opens with %q, want %q...", top.Answer, wantAnswer)
		}
		want = append(want, report.IDE2E, report.IDSegments, report.IDSegmentCDF, report.IDSegmentTime)
	}
	if stageCPU != nil {
		want = append(want, report.IDStageCPU)
	}
	want = append(want, report.IDCDF, report.IDThroughput, report.IDP99, report.IDShare)
	for i := 1; i <= waterfalls; i++ {
		want = append(want, report.WaterfallID(i))
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("charts %v, want %v", ids, want)
	}
	has := func(c chart, prefix string) bool {
		for _, s := range c.Texts {
			if strings.HasPrefix(s, prefix) {
				return true
			}
		}
		return false
	}
	for _, id := range []string{report.IDCDF, report.IDThroughput, report.IDP99} {
		c := byID[id]
		for _, h := range hops {
			if !has(c, h) {
				t.Errorf("chart %s: no series named %s in %q", id, h, c.Texts)
			}
		}
		// A line per hop.
		if c.Drawn < len(hops) {
			t.Errorf("chart %s: %d drawn paths for %d hops", id, c.Drawn, len(hops))
		}
	}
	share := byID[report.IDShare]
	for _, h := range append(hops, report.Between) {
		if !has(share, h+" ") {
			t.Errorf("share chart: no bar for %s in %q", h, share.Texts)
		}
	}
	if share.Drawn < len(hops)+1 {
		t.Errorf("share chart: %d drawn paths for %d bars", share.Drawn, len(hops)+1)
	}
	if complete > 0 {
		checkSegments(t, byID)
	}
	if stageCPU != nil {
		c := byID[report.IDStageCPU]
		if strings.Join(c.Legend, "|") != strings.Join(stageCPU, "|") {
			t.Errorf("CPU by stage chart: legend %q, want the summary's %q", c.Legend, stageCPU)
		}
		for _, l := range stageCPU {
			if !has(c, l) {
				t.Errorf("CPU by stage chart: no bar labelled %q in %q", l, c.Texts)
			}
		}
		if c.Drawn < 2 {
			t.Errorf("CPU by stage chart: %d drawn paths", c.Drawn)
		}
	}
	for i := 1; i <= waterfalls; i++ {
		c := byID[report.WaterfallID(i)]
		bars := 0
		for _, s := range c.Texts {
			if strings.Contains(s, " -> ") {
				bars++
			}
		}
		if bars == 0 || c.Drawn < bars {
			t.Errorf("waterfall %d: %d labelled intervals, %d drawn paths: %q", i, bars, c.Drawn, c.Texts)
		}
	}
}

// checkSegments checks the segment charts: the end-to-end CDF draws its
// two series, the stacked bar's legend names every segment with shares
// adding up to 100% within their rounding, and each segment has a line in
// the CDF and p99 charts.
func checkSegments(t *testing.T, byID map[string]chart) {
	e2e := byID[report.IDE2E]
	if len(e2e.Legend) != 2 || !strings.HasPrefix(e2e.Legend[0], "socket to executed (") || !strings.HasPrefix(e2e.Legend[1], "socket to committed (") || e2e.Drawn < 2 {
		t.Errorf("end-to-end chart: legend %q, %d drawn paths", e2e.Legend, e2e.Drawn)
	}
	seg := byID[report.IDSegments]
	if len(seg.Legend) != trace.NumSegments {
		t.Fatalf("segments chart: %d legend entries, want %d: %q", len(seg.Legend), trace.NumSegments, seg.Legend)
	}
	var sum float64
	for i, l := range seg.Legend {
		var share float64
		rest := strings.TrimPrefix(l, trace.Segments[i].Label+" ")
		if _, err := fmt.Sscanf(rest, "%f%%", &share); err != nil || rest == l {
			t.Errorf("segments chart: entry %d %q: want %q and its share", i, l, trace.Segments[i].Label)
		}
		sum += share
	}
	if sum < 100-0.05*trace.NumSegments || sum > 100+0.05*trace.NumSegments {
		t.Errorf("segments chart: shares add up to %.1f%%: %q", sum, seg.Legend)
	}
	for _, id := range []string{report.IDSegmentCDF, report.IDSegmentTime} {
		c := byID[id]
		if len(c.Legend) != trace.NumSegments || c.Drawn < trace.NumSegments {
			t.Errorf("chart %s: %d legend entries, %d drawn paths; want %d of each", id, len(c.Legend), c.Drawn, trace.NumSegments)
		}
	}
}
