package report

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/tpugo/tpu/trace"
)

// Chart ids of the page; a waterfall's id is WaterfallID(i).
const (
	IDCDF        = "cdf"
	IDThroughput = "throughput"
	IDP99        = "p99"
	IDShare      = "share"
)

// WaterfallID returns the id of the waterfall of the i-th slowest tracer
// (from 1).
func WaterfallID(i int) string { return fmt.Sprintf("waterfall-%d", i) }

// cdfFloor is where the CDF's logarithmic axis starts: shorter spans
// (zero-length marker spans, in a trace file written before tpu's spans
// followed the work) are drawn at it.
const cdfFloor = time.Microsecond

// WriteHTML writes the report of spans, which it borrows, to w: the text
// summary (preformatted, as given) and the charts of Compute as inline
// SVG, in one page that loads nothing else and runs no script.
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
body { font-family: sans-serif; margin: 1.5em; max-width: 70em; }
figure { margin: 1.5em 0; border-top: 1px solid #ccc; padding-top: 0.5em; }
figcaption { margin-bottom: 0.5em; }
figcaption h2 { font-size: 1.1em; margin: 0 0 0.3em 0; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
svg { max-width: 100%%; height: auto; }
</style>
</head>
<body>
<h1>%s</h1>
<pre id="summary">%s</pre>
`, html.EscapeString(cfg.Title), html.EscapeString(cfg.Title), html.EscapeString(summary))

	charts := []struct {
		id, title, caption string
		draw               func() (*plot.Plot, vg.Length, error)
	}{
		{IDCDF, "Span duration by hop (CDF)",
			fmt.Sprintf("For each hop, the fraction of its spans at or below a duration (log scale; spans under %v are drawn at %v).", cdfFloor, cdfFloor),
			func() (*plot.Plot, vg.Length, error) { return cdfPlot(d) }},
		{IDThroughput, "Throughput over time",
			fmt.Sprintf("Packets per second through each hop (a span's tpu.packets or tpu.transactions, else 1 per span), of the recorded spans only, by span end time in bins of %v.", d.Bin),
			func() (*plot.Plot, vg.Length, error) { return throughputPlot(d) }},
		{IDP99, "p99 span duration over time",
			fmt.Sprintf("The 99th percentile of each hop's span durations, by span end time in bins of %v.", d.Bin),
			func() (*plot.Plot, vg.Length, error) { return p99Plot(d) }},
		{IDShare, "Share of end-to-end time",
			"Within each trace, the time covered by each hop's spans (parallel spans counted once) and by none (between hops: queues, credits, mailboxes), summed over all traces.",
			func() (*plot.Plot, vg.Length, error) { return sharePlot(d) }},
	}
	for i, t := range d.Tracers {
		title := fmt.Sprintf("Tracer %s: %v from %s to %s", t.Signature, t.Total(), t.Steps[0].Name, t.Steps[len(t.Steps)-1].Name)
		caption := fmt.Sprintf("The %s slowest of %d tracer packets (trace %s): one bar per interval between consecutive steps.", ordinal(i+1), d.TracerCount, t.TraceID)
		charts = append(charts, struct {
			id, title, caption string
			draw               func() (*plot.Plot, vg.Length, error)
		}{WaterfallID(i + 1), title, caption, func() (*plot.Plot, vg.Length, error) { return waterfallPlot(t) }})
	}
	if len(d.Tracers) == 0 {
		b.WriteString("<p id=\"no-tracers\">No tracer packets in this trace (tpu run --tracer-every N records them).</p>\n")
	}
	for _, c := range charts {
		p, h, err := c.draw()
		if err != nil {
			return fmt.Errorf("report: chart %s: %w", c.id, err)
		}
		fmt.Fprintf(&b, "<figure id=\"%s\">\n<figcaption><h2>%s</h2>%s</figcaption>\n",
			c.id, html.EscapeString(c.title), html.EscapeString(c.caption))
		if err := writeSVG(&b, p, h); err != nil {
			return fmt.Errorf("report: chart %s: %w", c.id, err)
		}
		b.WriteString("</figure>\n")
	}
	b.WriteString("</body>\n</html>\n")
	_, err = b.WriteTo(w)
	return err
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "slowest"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", n)
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

func seconds(d time.Duration) float64 { return d.Seconds() }
func millis(d time.Duration) float64  { return float64(d) / float64(time.Millisecond) }
func micros(d time.Duration) float64  { return float64(d) / float64(time.Microsecond) }

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

func addLine(p *plot.Plot, i int, name string, xys plotter.XYs) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

func cdfPlot(d Data) (*plot.Plot, vg.Length, error) {
	p := newPlot("", "span duration (us, log scale)", "fraction of spans at or below")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Left, p.Legend.Top = true, true
	for i, h := range d.Hops {
		ds := d.Durations[h]
		xys := make(plotter.XYs, 0, len(ds)+1)
		// One point per distinct duration, at the fraction at or below it.
		for j, v := range ds {
			if j+1 < len(ds) && ds[j+1] == v {
				continue
			}
			xys = append(xys, plotter.XY{X: micros(max(v, cdfFloor)), Y: float64(j+1) / float64(len(ds))})
		}
		xys = append(plotter.XYs{{X: xys[0].X, Y: 0}}, xys...)
		if err := addLine(p, i, fmt.Sprintf("%s (%d)", h, len(ds)), xys); err != nil {
			return nil, 0, err
		}
	}
	return p, 12 * vg.Centimeter, nil
}

// binSeries returns, per hop, one point per bin at the bin's middle,
// skipping the bins where value says the hop is absent.
func binSeries(d Data, value func(b Bin, hop string) (float64, bool)) map[string]plotter.XYs {
	out := map[string]plotter.XYs{}
	for k, b := range d.Bins {
		x := seconds(time.Duration(k)*d.Bin + d.Bin/2)
		for _, h := range d.Hops {
			if v, ok := value(b, h); ok {
				out[h] = append(out[h], plotter.XY{X: x, Y: v})
			}
		}
	}
	return out
}

func overTime(d Data, y string, value func(b Bin, hop string) (float64, bool)) (*plot.Plot, vg.Length, error) {
	p := newPlot("", "time since the first span started (s)", y)
	p.Y.Min = 0
	series := binSeries(d, value)
	for i, h := range d.Hops {
		xys := series[h]
		if len(xys) == 0 {
			continue
		}
		if err := addLine(p, i, h, xys); err != nil {
			return nil, 0, err
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, 0, err
		}
		s.GlyphStyle.Color = plotutil.Color(i)
		s.GlyphStyle.Radius = vg.Points(1.5)
		p.Add(s)
	}
	return p, 10 * vg.Centimeter, nil
}

func throughputPlot(d Data) (*plot.Plot, vg.Length, error) {
	per := seconds(d.Bin)
	return overTime(d, "packets per second", func(b Bin, h string) (float64, bool) {
		n, ok := b.Items[h]
		return float64(n) / per, ok
	})
}

func p99Plot(d Data) (*plot.Plot, vg.Length, error) {
	return overTime(d, "p99 span duration (ms)", func(b Bin, h string) (float64, bool) {
		v, ok := b.P99[h]
		return millis(v), ok
	})
}

func sharePlot(d Data) (*plot.Plot, vg.Length, error) {
	p := newPlot("", "share of end-to-end time (%)", "")
	vals := make(plotter.Values, len(d.Shares))
	names := make([]string, len(d.Shares))
	for i, s := range d.Shares {
		// The first share at the top.
		j := len(d.Shares) - 1 - i
		vals[j] = 100 * s.Fraction
		names[j] = fmt.Sprintf("%s %.1f%%", s.Name, 100*s.Fraction)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(14))
	if err != nil {
		return nil, 0, err
	}
	bars.Horizontal = true
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, 100
	return p, vg.Length(len(vals))*vg.Points(24) + 3*vg.Centimeter, nil
}

// waterfallPlot draws one bar per interval between t's consecutive steps,
// the first at the top, on a time axis from the first step.
func waterfallPlot(t Tracer) (*plot.Plot, vg.Length, error) {
	p := newPlot("", "time since "+t.Steps[0].Name+" (ms)", "")
	ivs := t.Intervals()
	names := make([]string, len(ivs))
	total := millis(t.Total())
	// A bar is at least this wide, so a zero-length interval still shows.
	minWidth := math.Max(total/400, 1e-6)
	for i, iv := range ivs {
		y := float64(len(ivs) - 1 - i)
		names[int(y)] = fmt.Sprintf("%s (%v)", iv.Label, iv.To-iv.From)
		x0, x1 := millis(iv.From), millis(iv.To)
		if x1-x0 < minWidth {
			x1 = x0 + minWidth
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y - 0.35}, {X: x1, Y: y - 0.35}, {X: x1, Y: y + 0.35}, {X: x0, Y: y + 0.35}})
		if err != nil {
			return nil, 0, err
		}
		poly.Color = plotutil.Color(i)
		poly.LineStyle.Color = color.Black
		poly.LineStyle.Width = vg.Points(0.3)
		p.Add(poly)
	}
	p.NominalY(names...)
	p.X.Min = 0
	p.X.Max = math.Max(total, minWidth) * 1.02
	return p, vg.Length(len(ivs))*vg.Points(22) + 3*vg.Centimeter, nil
}
