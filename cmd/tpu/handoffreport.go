package main

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"runtime"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// tpu bench handoff's output: the tables of medians and spreads per
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
	{"heap_peak", "MB", func(r handoffResult) float64 { return float64(r.HeapPeak) / 1e6 }},
	{"heap_mean", "MB", func(r handoffResult) float64 { return float64(r.HeapMean) / 1e6 }},
	{"p50", "us", func(r handoffResult) float64 { return r.P50 }},
	{"p99", "us", func(r handoffResult) float64 { return r.P99 }},
}

// spread is a figure over the rounds: median, min, max.
type spread struct{ med, min, max float64 }

func spreadOf(res []handoffResult, mode string, consumers int, get func(handoffResult) float64) (spread, bool) {
	var v []float64
	for _, r := range res {
		if r.Mode == mode && r.Consumers == consumers {
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

// writeHandoffTables prints a markdown table per consumer count: each
// figure's median per mode with its spread, and copy over refcount.
func writeHandoffTables(w io.Writer, res []handoffResult, f handoffFlags) {
	num := func(v float64) string {
		switch {
		case v == 0:
			return "0"
		case v >= 100:
			return fmt.Sprintf("%.0f", v)
		case v >= 10:
			return fmt.Sprintf("%.1f", v)
		}
		return fmt.Sprintf("%.2f", v)
	}
	cell := func(s spread) string {
		return fmt.Sprintf("%s (%s-%s)", num(s.med), num(s.min), num(s.max))
	}
	for consumers := 1; consumers < len(handoffConsumers); consumers++ {
		fmt.Fprintf(w, "\n### %d consumer%s: %s\n\n", consumers, map[bool]string{true: "s"}[consumers > 1], handoffConsumers[consumers])
		fmt.Fprintf(w, "| figure | refcount: median (min-max) | copy: median (min-max) | copy / refcount |\n|---|---|---|---|\n")
		for _, st := range handoffStats {
			ref, ok1 := spreadOf(res, "refcount", consumers, st.get)
			cp, ok2 := spreadOf(res, "copy", consumers, st.get)
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
	fmt.Fprintf(w, "\n%d rounds; each run offers the same %d transfers open-loop at %.0f tx/s; latency from each transaction's scheduled send to its execution; allocations, bytes and GC share from the first send to the end of the drain, per packet received; heap = live heap objects sampled every 10 ms. --num-workers %d --block-production-method %s --sync %s, GOMAXPROCS %d.\n",
		f.rounds, f.count, f.rate, f.workers, f.method, f.syncMode, runtime.GOMAXPROCS(0)+1)
}

// writeHandoffHTML draws each figure's median against the consumer
// count, a line per mode, each round's value as a point, as inline SVG
// in one page (the approach of trace/report).
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
	for _, st := range handoffStats {
		p := plot.New()
		p.Title.Text = st.name
		p.X.Label.Text = "consumers of each verified batch"
		p.Y.Label.Text = st.unit
		p.X.Min, p.X.Max = 0.8, float64(len(handoffConsumers)-1)+0.2
		p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 1, Label: "1"}, {Value: 2, Label: "2"}, {Value: 3, Label: "3"}})
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
		for i, mode := range handoffModes {
			var med, pts plotter.XYs
			for c := 1; c < len(handoffConsumers); c++ {
				if s, ok := spreadOf(res, mode.String(), c, st.get); ok {
					med = append(med, plotter.XY{X: float64(c), Y: s.med})
				}
				for _, r := range res {
					if r.Mode == mode.String() && r.Consumers == c {
						pts = append(pts, plotter.XY{X: float64(c) + 0.04*float64(2*i-1), Y: st.get(r)})
					}
				}
			}
			if len(med) == 0 {
				continue
			}
			l, err := plotter.NewLine(med)
			if err != nil {
				return err
			}
			l.Color, l.Width = plotutil.Color(i), vg.Points(1.5)
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			sc.Color, sc.Shape = plotutil.Color(i), plotutil.Shape(i)
			p.Add(l, sc)
			p.Legend.Add(mode.String()+" (median; points: rounds)", l, sc)
		}
		fmt.Fprintf(w, "<figure id=\"%s\">\n", st.name)
		c := vgsvg.New(16*vg.Centimeter, 9*vg.Centimeter)
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
