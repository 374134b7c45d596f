package main

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"math"
	"runtime"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// tpu bench handoff's output: a table of what the copies cost in CPU by
// size and consumer count, the tables of medians and spreads per size and
// consumer count, and the same figures drawn as an HTML page.

// handoffStat is one figure of a run, for the tables and the charts.
type handoffStat struct {
	name, unit string
	get        func(handoffResult) float64
}

var handoffStats = []handoffStat{
	{"executed", "tx", func(r handoffResult) float64 { return float64(r.Executed) }},
	{"not executed", "tx", func(r handoffResult) float64 { return float64(r.Offered) - float64(r.Executed) }},
	{"tps", "tx/s", func(r handoffResult) float64 { return r.TPS }},
	{"allocs_per_packet", "allocations", func(r handoffResult) float64 { return r.AllocsPerPacket }},
	{"bytes_per_packet", "bytes", func(r handoffResult) float64 { return r.BytesPerPacket }},
	{"gc_cpu", "% of CPU", func(r handoffResult) float64 { return 100 * r.GCCPU }},
	{"cpu_per_packet", "us", func(r handoffResult) float64 { return r.CPUPerPacket }},
	{"fanout_cpu_per_packet", "us", func(r handoffResult) float64 { return r.FanoutPerPacket }},
	{"fanout_share", "% of CPU", func(r handoffResult) float64 { return 100 * r.FanoutShare }},
	{"fanout_thread_cpu_per_packet", "us", func(r handoffResult) float64 { return r.FanoutCPUPerPacket }},
	{"fanout_clocked", "% of steps", func(r handoffResult) float64 { return 100 * r.FanoutClocked }},
	{"heap_peak", "MB", func(r handoffResult) float64 { return float64(r.HeapPeak) / 1e6 }},
	{"heap_mean", "MB", func(r handoffResult) float64 { return float64(r.HeapMean) / 1e6 }},
	{"p50", "us", func(r handoffResult) float64 { return r.P50 }},
	{"p99", "us", func(r handoffResult) float64 { return r.P99 }},
}

// spread is a figure over the rounds: median, min, max.
type spread struct{ med, min, max float64 }

// handoffKey is a cell of the bench's matrix: a mode at a size and a
// consumer count.
type handoffKey struct {
	mode            string
	size, consumers int
}

func (k handoffKey) of(r handoffResult) bool {
	return r.Mode == k.mode && r.Size == k.size && r.Consumers == k.consumers
}

func spreadOf(res []handoffResult, k handoffKey, get func(handoffResult) float64) (spread, bool) {
	var v []float64
	for _, r := range res {
		if k.of(r) {
			v = append(v, get(r))
		}
	}
	if len(v) == 0 {
		return spread{}, false
	}
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return spread{med: med, min: v[0], max: v[len(v)-1]}, true
}

// handoffAxes returns the sizes (in the order run) and the consumer
// counts (ascending) of res, and whether each size was padded.
func handoffAxes(res []handoffResult) (sizes []int, padded map[int]bool, consumers []int) {
	padded = map[int]bool{}
	for _, r := range res {
		if !slices.Contains(sizes, r.Size) {
			sizes = append(sizes, r.Size)
		}
		padded[r.Size] = r.Padded
		if !slices.Contains(consumers, r.Consumers) {
			consumers = append(consumers, r.Consumers)
		}
	}
	slices.Sort(consumers)
	return sizes, padded, consumers
}

// sizeLabel names a size: "280 B transfers", "1232 B (memo)".
func sizeLabel(size int, padded bool) string {
	if padded {
		return fmt.Sprintf("%d B (memo)", size)
	}
	return fmt.Sprintf("%d B transfers", size)
}

// num formats a figure for the tables.
func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// copyCost is what the copies cost at a size and consumer count, from
// the medians: the fan-out's CPU per packet (its thread's clock, scaled)
// in copy mode less refcount's, as a share of the process's CPU per
// packet with refcount (0 to 1; 0 when a mode is missing).
func copyCost(res []handoffResult, size, consumers int) (float64, bool) {
	fan := func(r handoffResult) float64 { return r.FanoutCPUPerPacket }
	cpu := func(r handoffResult) float64 { return r.CPUPerPacket }
	cf, ok1 := spreadOf(res, handoffKey{"copy", size, consumers}, fan)
	rf, ok2 := spreadOf(res, handoffKey{"refcount", size, consumers}, fan)
	rc, ok3 := spreadOf(res, handoffKey{"refcount", size, consumers}, cpu)
	if !ok1 || !ok2 || !ok3 || rc.med <= 0 {
		return 0, false
	}
	return (cf.med - rf.med) / rc.med, true
}

// writeHandoffCost prints the answer's table: for every size and consumer
// count, the medians of tx/s, CPU per packet and the fan-out's CPU per
// packet in both modes, and what the copies cost.
func writeHandoffCost(w io.Writer, res []handoffResult) {
	sizes, padded, consumers := handoffAxes(res)
	fmt.Fprintf(w, "\n### Copy against refcount, medians\n\n")
	fmt.Fprintf(w, "| size | consumers | tx/s refcount / copy (ratio) | CPU us/packet refcount / copy (ratio) | fan-out thread CPU us/packet refcount / copy | copies' CPU, %% of the process's |\n|---|---|---|---|---|---|\n")
	for _, size := range sizes {
		for _, c := range consumers {
			var cells [3]string
			for i, get := range []func(handoffResult) float64{
				func(r handoffResult) float64 { return r.TPS },
				func(r handoffResult) float64 { return r.CPUPerPacket },
				func(r handoffResult) float64 { return r.FanoutCPUPerPacket },
			} {
				ref, ok1 := spreadOf(res, handoffKey{"refcount", size, c}, get)
				cp, ok2 := spreadOf(res, handoffKey{"copy", size, c}, get)
				switch {
				case !ok1 || !ok2:
					cells[i] = "-"
				case i < 2 && ref.med > 0:
					cells[i] = fmt.Sprintf("%s / %s (%.2f)", num(ref.med), num(cp.med), cp.med/ref.med)
				default:
					cells[i] = fmt.Sprintf("%s / %s", num(ref.med), num(cp.med))
				}
			}
			cost := "-"
			if v, ok := copyCost(res, size, c); ok {
				cost = fmt.Sprintf("%.2f%%", 100*v)
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s |\n", sizeLabel(size, padded[size]), c, cells[0], cells[1], cells[2], cost)
		}
	}
}

// writeHandoffTables prints the cost table, then a markdown table per
// size and consumer count: each figure's median per mode with its
// spread, and copy over refcount.
func writeHandoffTables(w io.Writer, res []handoffResult, f handoffFlags) {
	cell := func(s spread) string {
		return fmt.Sprintf("%s (%s-%s)", num(s.med), num(s.min), num(s.max))
	}
	writeHandoffCost(w, res)
	sizes, padded, consumers := handoffAxes(res)
	for _, size := range sizes {
		for _, c := range consumers {
			fmt.Fprintf(w, "\n### %s, %d consumer%s: %s\n\n", sizeLabel(size, padded[size]), c, map[bool]string{true: "s"}[c > 1], handoffConsumers(c))
			fmt.Fprintf(w, "| figure | refcount: median (min-max) | copy: median (min-max) | copy / refcount |\n|---|---|---|---|\n")
			for _, st := range handoffStats {
				ref, ok1 := spreadOf(res, handoffKey{"refcount", size, c}, st.get)
				cp, ok2 := spreadOf(res, handoffKey{"copy", size, c}, st.get)
				if !ok1 || !ok2 {
					continue
				}
				ratio := "-"
				if ref.med != 0 {
					ratio = fmt.Sprintf("%.2f", cp.med/ref.med)
				}
				fmt.Fprintf(w, "| %s (%s) | %s | %s | %s |\n", st.name, st.unit, cell(ref), cell(cp), ratio)
			}
		}
	}
	load := fmt.Sprintf("open-loop at %.0f tx/s; latency from each transaction's scheduled send to its execution", f.rate)
	if f.rate == 0 {
		load = "closed-loop (as fast as the pipeline accepts; no latency figures)"
	}
	fmt.Fprintf(w, "\n%d rounds; each run offers the same %d transactions of its size %s; CPU from getrusage (process) and the fan-out thread's clock (fanout_thread_cpu: the steps it timed alone, scaled to all), per packet received; the copies' CPU is the fan-out's thread CPU in copy mode less refcount's, over the process's with refcount; allocations, bytes and GC share from the first send to the end of the drain, per packet received; heap = live heap objects sampled every 10 ms. --num-workers %d --block-production-method %s --sync %s, GOMAXPROCS %d.\n",
		f.rounds, f.count, load, f.workers, f.method, f.syncMode, runtime.GOMAXPROCS(0)+1)
}

// handoffSeries is a line of a chart: a mode at a size, its medians
// against the consumer count and every round's value.
type handoffSeries struct {
	label    string
	mode     string
	size     int
	med, pts plotter.XYs
}

// handoffChartData returns st's series: one per size and mode that ran,
// the sizes in the order run, refcount first.
func handoffChartData(res []handoffResult, st handoffStat) []handoffSeries {
	sizes, padded, consumers := handoffAxes(res)
	var out []handoffSeries
	n := 2 * len(sizes)
	for si, size := range sizes {
		for mi, mode := range handoffModes {
			s := handoffSeries{label: mode.String() + ", " + sizeLabel(size, padded[size]), mode: mode.String(), size: size}
			// Each series' points sit a little apart, so that none hides another's.
			dx := 0.05 * (float64(2*si+mi) - float64(n-1)/2)
			for _, c := range consumers {
				k := handoffKey{mode.String(), size, c}
				if sp, ok := spreadOf(res, k, st.get); ok {
					s.med = append(s.med, plotter.XY{X: float64(c), Y: sp.med})
				}
				for _, r := range res {
					if k.of(r) {
						s.pts = append(s.pts, plotter.XY{X: float64(c) + dx, Y: st.get(r)})
					}
				}
			}
			if len(s.med) > 0 {
				out = append(out, s)
			}
		}
	}
	return out
}

// writeHandoffHTML draws each figure's median against the consumer
// count, a line per mode and size, each round's value as a point, as
// inline SVG in one page (the approach of trace/report).
func writeHandoffHTML(w io.Writer, res []handoffResult, f handoffFlags) error {
	fmt.Fprintf(w, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tpu bench handoff</title>
<style>
body { font-family: sans-serif; margin: 1.5em; max-width: 70em; }
figure { margin: 1.5em 0; border-top: 1px solid #ccc; padding-top: 0.5em; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
svg { max-width: 100%%; height: auto; }
</style>
</head>
<body>
<h1>tpu bench handoff</h1>
`)
	var tables bytes.Buffer
	writeHandoffTables(&tables, res, f)
	fmt.Fprintf(w, "<pre id=\"tables\">%s</pre>\n", html.EscapeString(tables.String()))
	_, _, consumers := handoffAxes(res)
	var ticks []plot.Tick
	for _, c := range consumers {
		ticks = append(ticks, plot.Tick{Value: float64(c), Label: fmt.Sprint(c)})
	}
	for _, st := range handoffStats {
		p := plot.New()
		p.Title.Text = st.name
		p.X.Label.Text = "consumers of each verified batch"
		p.Y.Label.Text = st.unit
		if len(consumers) > 0 {
			p.X.Min, p.X.Max = float64(consumers[0])-0.3, float64(consumers[len(consumers)-1])+0.3
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.Legend.Top, p.Legend.Left = true, true
		p.Add(plotter.NewGrid())
		for i, s := range handoffChartData(res, st) {
			l, err := plotter.NewLine(s.med)
			if err != nil {
				return err
			}
			l.Color, l.Width = plotutil.Color(i), vg.Points(1.5)
			l.Dashes = plotutil.Dashes(i / 2) // a dash per size
			sc, err := plotter.NewScatter(s.pts)
			if err != nil {
				return err
			}
			sc.Color, sc.Shape = plotutil.Color(i), plotutil.Shape(i)
			p.Add(l, sc)
			p.Legend.Add(s.label, l, sc)
		}
		fmt.Fprintf(w, "<figure id=\"%s\">\n", st.name)
		c := vgsvg.New(16*vg.Centimeter, 10*vg.Centimeter)
		p.Draw(draw.New(c))
		var svg bytes.Buffer
		if _, err := c.WriteTo(&svg); err != nil {
			return err
		}
		out := svg.Bytes()
		if i := bytes.Index(out, []byte("<svg")); i > 0 {
			out = out[i:] // no XML prolog inside HTML
		}
		w.Write(out)
		fmt.Fprintf(w, "</figure>\n")
	}
	_, err := fmt.Fprintf(w, "</body>\n</html>\n")
	return err
}
