package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tpugo/tpu/trace"
)

// palette tells ten series apart (Tableau 10).
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff},
	{0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
	{0x9c, 0x75, 0x5f, 0xff}, {0xba, 0xb0, 0xac, 0xff},
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// segmentFloor is where the segment charts' logarithmic axes start:
// shorter segments are drawn at it.
const segmentFloor = 100 * time.Nanosecond

func seconds(d time.Duration) float64 { return d.Seconds() }
func millis(d time.Duration) float64  { return float64(d) / float64(time.Millisecond) }
func micros(d time.Duration) float64  { return float64(d) / float64(time.Microsecond) }

func newPlot(x, y string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// addLine draws xys in palette color i; its legend is the caller's.
func addLine(p *plot.Plot, i int, xys plotter.XYs) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = colorOf(i)
	l.Width = vg.Points(1.5)
	p.Add(l)
	return nil
}

// cdfXYs returns the CDF of ds, sorted ascending, as points (x(v), the
// fraction at or below v), one per distinct value, from 0.
func cdfXYs(ds []time.Duration, x func(time.Duration) float64) plotter.XYs {
	xys := make(plotter.XYs, 0, len(ds)+1)
	for j, v := range ds {
		if j+1 < len(ds) && ds[j+1] == v {
			continue
		}
		xys = append(xys, plotter.XY{X: x(v), Y: float64(j+1) / float64(len(ds))})
	}
	return append(plotter.XYs{{X: xys[0].X, Y: 0}}, xys...)
}

func logX(p *plot.Plot) {
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
}

func cdfPlot(d Data) (chart, error) {
	p := newPlot("span duration (us, log scale)", "fraction of spans at or below")
	logX(p)
	var leg []legendItem
	for i, h := range d.Hops {
		ds := d.Durations[h]
		if err := addLine(p, i, cdfXYs(ds, func(v time.Duration) float64 { return micros(max(v, cdfFloor)) })); err != nil {
			return chart{}, err
		}
		leg = append(leg, legendItem{i, fmt.Sprintf("%s (%d)", h, len(ds))})
	}
	return chart{p: p, h: 11 * vg.Centimeter, legend: leg}, nil
}

// e2ePlot is the tracers' socket to executed and socket to committed.
func e2ePlot(d Data) (chart, error) {
	p := newPlot("latency (ms, log scale)", "fraction of tracers at or below")
	logX(p)
	var exe, com []time.Duration
	for _, t := range d.Times {
		exe = append(exe, t.Executed())
		if t.Committed {
			com = append(com, t.ToCommitted())
		}
	}
	var leg []legendItem
	b := d.Breakdown
	for i, s := range []struct {
		name string
		ds   []time.Duration
		q    trace.Quantiles
	}{{"socket to executed", exe, b.Executed}, {"socket to committed", com, b.ToCommitted}} {
		if len(s.ds) == 0 {
			continue
		}
		slices.Sort(s.ds)
		if err := addLine(p, i, cdfXYs(s.ds, func(v time.Duration) float64 { return millis(max(v, time.Microsecond)) })); err != nil {
			return chart{}, err
		}
		leg = append(leg, legendItem{i, fmt.Sprintf("%s (%d): p50 %v, p99 %v", s.name, len(s.ds), trace.Short(s.q.P50), trace.Short(s.q.P99))})
	}
	return chart{p: p, h: 9 * vg.Centimeter, legend: leg}, nil
}

// segmentsPlot is one horizontal bar cut into the segments' shares, in
// pipeline order from the left.
func segmentsPlot(d Data) (chart, error) {
	p := newPlot("share of end-to-end time (%)", "")
	p.HideY()
	var leg []legendItem
	x := 0.0
	for i, s := range d.Breakdown.Segments {
		w := 100 * s.Share
		leg = append(leg, legendItem{i, fmt.Sprintf("%s %.1f%% (p50 %v, p99 %v)", s.Label, w, trace.Short(s.P50), trace.Short(s.P99))})
		if w <= 0 {
			continue
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x, Y: 0}, {X: x + w, Y: 0}, {X: x + w, Y: 1}, {X: x, Y: 1}})
		if err != nil {
			return chart{}, err
		}
		poly.Color = colorOf(i)
		poly.LineStyle.Width = 0
		p.Add(poly)
		x += w
	}
	p.X.Min, p.X.Max = 0, 100
	p.Y.Min, p.Y.Max = 0, 1
	return chart{p: p, h: 4 * vg.Centimeter, legend: leg}, nil
}

// segmentCDFPlot is each segment's CDF over the tracers that have it.
func segmentCDFPlot(d Data) (chart, error) {
	p := newPlot("time (us, log scale)", "fraction of tracers at or below")
	logX(p)
	var leg []legendItem
	for i := range trace.NumSegments {
		var ds []time.Duration
		for _, t := range d.Times {
			if i != trace.SegCommitWait || t.Committed {
				ds = append(ds, t.Segments[i])
			}
		}
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		if err := addLine(p, i, cdfXYs(ds, func(v time.Duration) float64 { return micros(max(v, segmentFloor)) })); err != nil {
			return chart{}, err
		}
		leg = append(leg, legendItem{i, trace.Segments[i].Label})
	}
	return chart{p: p, h: 11 * vg.Centimeter, legend: leg}, nil
}

// segmentTimePlot is each segment's p99 in bins of the tracers' receive
// time from the first packet: bins of bin, widened so that there are at
// most 40 of them.
func segmentTimePlot(d Data, bin time.Duration) (chart, error) {
	span := d.Times[len(d.Times)-1].Received.Sub(d.First)
	bin = max(bin, span/40+1)
	n := int(span/bin) + 1
	vals := make([][trace.NumSegments][]time.Duration, n)
	for _, t := range d.Times {
		k := min(max(int(t.Received.Sub(d.First)/bin), 0), n-1)
		for i := range trace.NumSegments {
			if i != trace.SegCommitWait || t.Committed {
				vals[k][i] = append(vals[k][i], t.Segments[i])
			}
		}
	}
	p := newPlot(fmt.Sprintf("socket receive, time since the first packet (s; bins of %v)", bin), "p99 (us, log scale)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var leg []legendItem
	for i := range trace.NumSegments {
		var xys plotter.XYs
		for k := range vals {
			if ds := vals[k][i]; len(ds) > 0 {
				xys = append(xys, plotter.XY{X: seconds(time.Duration(k)*bin + bin/2), Y: micros(max(Quantile(ds, 0.99), segmentFloor))})
			}
		}
		if len(xys) == 0 {
			continue
		}
		if err := lineAndDots(p, i, xys); err != nil {
			return chart{}, err
		}
		leg = append(leg, legendItem{i, trace.Segments[i].Label})
	}
	p.X.Min = 0
	return chart{p: p, h: 11 * vg.Centimeter, legend: leg}, nil
}

func lineAndDots(p *plot.Plot, i int, xys plotter.XYs) error {
	if err := addLine(p, i, xys); err != nil {
		return err
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.GlyphStyle.Color = colorOf(i)
	s.GlyphStyle.Radius = vg.Points(1.5)
	p.Add(s)
	return nil
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

// clipTop returns where a linear y-axis over ys should end: at the
// largest value, unless it is more than twice the 95th percentile (a
// spike that would flatten the rest), then at 1.5 times that percentile.
func clipTop(ys []float64) (top float64, clipped bool) {
	if len(ys) == 0 {
		return 0, false
	}
	s := slices.Clone(ys)
	slices.Sort(s)
	hi := s[len(s)-1]
	p95 := s[min(len(s)-1, int(math.Ceil(0.95*float64(len(s))))-1)]
	if p95 > 0 && hi > 2*p95 {
		return 1.5 * p95, true
	}
	return hi, false
}

// overTime draws one line per hop over the bins, its y-axis clipped
// (clipTop): the points above the top are drawn on it as triangles, and
// the note says how many and how high they went.
func overTime(d Data, y, unit string, value func(b Bin, hop string) (float64, bool)) (chart, error) {
	p := newPlot("time since the first packet (s)", y)
	p.Y.Min = 0
	series := binSeries(d, value)
	var all []float64
	for _, xys := range series {
		for _, v := range xys {
			all = append(all, v.Y)
		}
	}
	top, clipped := clipTop(all)
	var leg []legendItem
	var over plotter.XYs
	maxOver := 0.0
	for i, h := range d.Hops {
		xys := series[h]
		if len(xys) == 0 {
			continue
		}
		for j := range xys {
			if clipped && xys[j].Y > top {
				over = append(over, plotter.XY{X: xys[j].X, Y: top})
				maxOver = max(maxOver, xys[j].Y)
				xys[j].Y = top
			}
		}
		if err := lineAndDots(p, i, xys); err != nil {
			return chart{}, err
		}
		leg = append(leg, legendItem{i, h})
	}
	c := chart{p: p, h: 10 * vg.Centimeter, legend: leg}
	if len(over) > 0 {
		s, err := plotter.NewScatter(over)
		if err != nil {
			return chart{}, err
		}
		s.GlyphStyle.Shape = draw.TriangleGlyph{}
		s.GlyphStyle.Color = color.Black
		s.GlyphStyle.Radius = vg.Points(4)
		p.Add(s)
		p.Y.Max = top
		c.note = fmt.Sprintf("The y-axis stops at %.4g %s: %d points above it (up to %.4g %s) are drawn as triangles on its top edge.", top, unit, len(over), maxOver, unit)
	}
	return c, nil
}

func throughputPlot(d Data) (chart, error) {
	per := seconds(d.Bin)
	return overTime(d, "packets per second", "packets/s", func(b Bin, h string) (float64, bool) {
		n, ok := b.Items[h]
		return float64(n) / per, ok
	})
}

func p99Plot(d Data) (chart, error) {
	return overTime(d, "p99 span duration (ms)", "ms", func(b Bin, h string) (float64, bool) {
		v, ok := b.P99[h]
		return millis(v), ok
	})
}

func sharePlot(d Data) (chart, error) {
	p := newPlot("share of the traces' time (%)", "")
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
		return chart{}, err
	}
	bars.Horizontal = true
	bars.Color = colorOf(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, 100
	return chart{p: p, h: vg.Length(len(vals))*vg.Points(24) + 3*vg.Centimeter}, nil
}

// StageCPULabel is how the CPU by stage chart names a stage and its
// figures, on its axis and in its legend: "sigverify 10.53 us (52.0%)".
func StageCPULabel(s StageCPU) string {
	return fmt.Sprintf("%s %.2f us (%.1f%%)", s.Stage, s.USPerTx, 100*s.Share)
}

// stageCPUPlot draws a horizontal bar per stage, its CPU microseconds per
// transaction, the first stage at the top.
func stageCPUPlot(stages []StageCPU) (chart, error) {
	p := newPlot("CPU per transaction executed (us)", "")
	vals := make(plotter.Values, len(stages))
	names := make([]string, len(stages))
	leg := make([]legendItem, len(stages))
	for i, s := range stages {
		j := len(stages) - 1 - i
		vals[j], names[j] = s.USPerTx, StageCPULabel(s)
		leg[i] = legendItem{0, StageCPULabel(s)}
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(14))
	if err != nil {
		return chart{}, err
	}
	bars.Horizontal = true
	bars.Color = colorOf(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalY(names...)
	p.X.Min = 0
	return chart{p: p, h: vg.Length(len(vals))*vg.Points(24) + 3*vg.Centimeter, legend: leg}, nil
}

// waterfallPlot draws one bar per interval between t's consecutive steps,
// the first at the top, on a time axis from the first step.
func waterfallPlot(t Tracer) (chart, error) {
	p := newPlot("time since "+t.Steps[0].Name+" (ms)", "")
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
			return chart{}, err
		}
		poly.Color = colorOf(i)
		poly.LineStyle.Color = color.Black
		poly.LineStyle.Width = vg.Points(0.3)
		p.Add(poly)
	}
	p.NominalY(names...)
	p.X.Min = 0
	p.X.Max = math.Max(total, minWidth) * 1.02
	return chart{p: p, h: vg.Length(len(ivs))*vg.Points(22) + 3*vg.Centimeter}, nil
}
