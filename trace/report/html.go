package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/tpugo/tpu/trace"
)

// Chart ids of the page; a waterfall's id is WaterfallID(i).
const (
	IDE2E         = "e2e"         // tracers' socket to executed and to committed (CDF)
	IDSegments    = "segments"    // the segments' shares, one stacked bar
	IDSegmentCDF  = "segment-cdf" // each segment's CDF
	IDSegmentTime = "segment-p99" // each segment's p99 over time
	IDCDF         = "cdf"
	IDThroughput  = "throughput"
	IDP99         = "p99"
	IDShare       = "share"
	IDStageCPU    = "stage-cpu" // Config.StageCPU, when given
)

// IDAnswer is the id of the page's first paragraph: the answer
// (trace.Breakdown.Headline), or why there is none.
const IDAnswer = "answer"

// WaterfallID returns the id of the waterfall of the i-th slowest tracer
// (from 1).
func WaterfallID(i int) string { return fmt.Sprintf("waterfall-%d", i) }

// cdfFloor is where the span CDF's logarithmic axis starts: shorter spans
// (zero-length marker spans, in a trace file written before tpu's spans
// followed the work) are drawn at it.
const cdfFloor = time.Microsecond

// chart is one drawn figure: the plot, its height, the legend written
// beside it in HTML (under the plot, never over its lines), and a note
// (what runs off its y-axis).
type chart struct {
	p      *plot.Plot
	h      vg.Length
	legend []legendItem
	note   string
}

type legendItem struct {
	color int // palette index
	text  string
}

type figure struct {
	id, title, caption string
	draw               func() (chart, error)
}

// WriteHTML writes the report of spans, which it borrows, to w: the
// answer first (where the tracers' time went), then the end-to-end CDF
// beside the segments' shares, each segment's CDF and p99 over time, the
// CPU by stage (with Config.StageCPU), the hops' span charts, the slowest tracers' waterfalls, and last the text
// summary (as given, folded). The charts are inline SVG, in one page
// that loads nothing else and runs no script.
func WriteHTML(w io.Writer, spans []trace.SpanRecord, summary string, cfg Config) error {
	d, err := Compute(spans, cfg)
	if err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	var b bytes.Buffer
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>%s</title>
<style>
body { font-family: sans-serif; margin: 1.5em; max-width: 80em; }
#answer { font-size: 1.15em; font-weight: bold; }
.row { display: flex; flex-wrap: wrap; gap: 1.5em; }
.row figure { flex: 1 1 30em; min-width: 0; }
figure { margin: 1.5em 0; border-top: 1px solid #ccc; padding-top: 0.5em; }
figcaption { margin-bottom: 0.5em; }
figcaption h2 { font-size: 1.1em; margin: 0 0 0.3em 0; }
.legend { list-style: none; padding: 0; margin: 0.3em 0; display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; font-size: 0.9em; }
.legend .sw { display: inline-block; width: 1.4em; height: 0.8em; margin-right: 0.4em; vertical-align: middle; }
.note { font-size: 0.9em; color: #a00; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
svg { max-width: 100%%; height: auto; }
</style>
</head>
<body>
<h1>%s</h1>
`, html.EscapeString(cfg.Title), html.EscapeString(cfg.Title))

	bd := d.Breakdown
	if h := bd.Headline(); h != "" {
		fmt.Fprintf(&b, "<p id=\"%s\">%s.</p>\n", IDAnswer, html.EscapeString(h))
	} else {
		fmt.Fprintf(&b, "<p id=\"%s\">No tracer packet followed from the socket to its execution (%d in the trace): tpu run --tracer-every N records them; the span charts below show only the time spent in hops, not the waits between them.</p>\n", IDAnswer, bd.Tracers)
	}
	if bd.Complete > 0 {
		if err := writeFigures(&b, "row", []figure{
			{IDE2E, "End to end: socket to executed and to committed (CDF)",
				fmt.Sprintf("For the %d tracer packets followed to their execution (%d to their slot's commit), the fraction at or below a latency (log scale).", bd.Complete, bd.Committed),
				func() (chart, error) { return e2ePlot(d) }},
			{IDSegments, "Where the time went: segments' shares",
				"Each tracer's end-to-end time is cut into segments that add up to it: each hop's service time and each wait between and inside hops. The bar is each segment's share of their total over all tracers.",
				func() (chart, error) { return segmentsPlot(d) }},
		}); err != nil {
			return err
		}
		if err := writeFigures(&b, "", []figure{
			{IDSegmentCDF, "Each segment (CDF)",
				fmt.Sprintf("Per segment, the fraction of tracers at or below a time (log scale; under %v drawn at %v).", segmentFloor, segmentFloor),
				func() (chart, error) { return segmentCDFPlot(d) }},
			{IDSegmentTime, "Each segment's p99 over time",
				"The 99th percentile of each segment, by the tracers' socket receive time in bins, from the first packet.",
				func() (chart, error) { return segmentTimePlot(d, cfg.Bin) }},
		}); err != nil {
			return err
		}
	}
	if len(cfg.StageCPU) > 0 {
		var total float64
		for _, st := range cfg.StageCPU {
			total += st.USPerTx
		}
		if err := writeFigures(&b, "", []figure{
			{IDStageCPU, "CPU by stage, per transaction",
				fmt.Sprintf("The run's CPU by stage (its summary's stage_cpu: a CPU profile by pprof label, scaled to the process's CPU), in microseconds per transaction executed, with each stage's share of the process's CPU; %.2f us in all.", total),
				func() (chart, error) { return stageCPUPlot(cfg.StageCPU) }},
		}); err != nil {
			return err
		}
	}
	b.WriteString("<h2>Per hop: span durations (the time inside hops only)</h2>\n")
	figs := []figure{
		{IDCDF, "Span duration by hop (CDF)",
			fmt.Sprintf("For each hop, the fraction of its spans at or below a duration (log scale; spans under %v are drawn at %v).", cdfFloor, cdfFloor),
			func() (chart, error) { return cdfPlot(d) }},
		{IDThroughput, "Throughput over time",
			fmt.Sprintf("Packets per second through each hop (a span's tpu.packets or tpu.transactions, else 1 per span), of the recorded spans only, by span end time in bins of %v from the first packet.", d.Bin),
			func() (chart, error) { return throughputPlot(d) }},
		{IDP99, "p99 span duration over time",
			fmt.Sprintf("The 99th percentile of each hop's span durations, by span end time in bins of %v from the first packet.", d.Bin),
			func() (chart, error) { return p99Plot(d) }},
		{IDShare, "Span time by hop within traces",
			"Within each trace, the time covered by each hop's spans (parallel spans counted once) and by none (between hops: the waits, which the segments above name), summed over all traces.",
			func() (chart, error) { return sharePlot(d) }},
	}
	for i, t := range d.Tracers {
		title := fmt.Sprintf("Tracer %s: %v from %s to %s", t.Signature, t.Total(), t.Steps[0].Name, t.Steps[len(t.Steps)-1].Name)
		caption := fmt.Sprintf("The %s of %d tracer packets (trace %s): one bar per interval between consecutive steps.", slowestName(i+1), d.TracerCount, t.TraceID)
		figs = append(figs, figure{WaterfallID(i + 1), title, caption, func() (chart, error) { return waterfallPlot(t) }})
	}
	if err := writeFigures(&b, "", figs); err != nil {
		return err
	}
	if len(d.Tracers) == 0 {
		b.WriteString("<p id=\"no-tracers\">No tracer packets in this trace (tpu run --tracer-every N records them).</p>\n")
	}
	fmt.Fprintf(&b, "<details>\n<summary>Text summary (tpu trace analyze)</summary>\n<pre id=\"summary\">%s</pre>\n</details>\n", html.EscapeString(summary))
	b.WriteString("</body>\n</html>\n")
	_, err = b.WriteTo(w)
	return err
}

// writeFigures draws figs, inside a <div class="class"> when class is
// not empty.
func writeFigures(b *bytes.Buffer, class string, figs []figure) error {
	if class != "" {
		fmt.Fprintf(b, "<div class=\"%s\">\n", class)
	}
	for _, f := range figs {
		c, err := f.draw()
		if err != nil {
			return fmt.Errorf("report: chart %s: %w", f.id, err)
		}
		fmt.Fprintf(b, "<figure id=\"%s\">\n<figcaption><h2>%s</h2>%s</figcaption>\n",
			f.id, html.EscapeString(f.title), html.EscapeString(f.caption))
		if err := writeSVG(b, c.p, c.h); err != nil {
			return fmt.Errorf("report: chart %s: %w", f.id, err)
		}
		if len(c.legend) > 0 {
			b.WriteString("<ul class=\"legend\">")
			for _, l := range c.legend {
				fmt.Fprintf(b, "<li><span class=\"sw\" style=\"background:%s\"></span>%s</li>", hexColor(l.color), html.EscapeString(l.text))
			}
			b.WriteString("</ul>\n")
		}
		if c.note != "" {
			fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", html.EscapeString(c.note))
		}
		b.WriteString("</figure>\n")
	}
	if class != "" {
		b.WriteString("</div>\n")
	}
	return nil
}

// slowestName names the n-th slowest (from 1): "slowest", "2nd slowest".
func slowestName(n int) string {
	switch n {
	case 1:
		return "slowest"
	case 2:
		return "2nd slowest"
	case 3:
		return "3rd slowest"
	}
	return fmt.Sprintf("%dth slowest", n)
}

const chartWidth = 22 * vg.Centimeter

// writeSVG draws p as an SVG element, without the XML prolog that has
// no place inside HTML.
func writeSVG(b *bytes.Buffer, p *plot.Plot, h vg.Length) error {
	c := vgsvg.New(chartWidth, h)
	p.Draw(draw.New(c))
	var svg bytes.Buffer
	if _, err := c.WriteTo(&svg); err != nil {
		return err
	}
	out := svg.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i > 0 {
		out = out[i:]
	}
	b.Write(out)
	return nil
}

func hexColor(i int) string {
	c := palette[i%len(palette)]
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}
