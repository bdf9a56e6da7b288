package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"vitbench/bench/accuracy"
)

// throughputBar is one bar of the throughput chart: a network case on one series (machine
// and backend) at the case's largest batch measured, its images per second (batch / median)
// and the p10–p90 span of the samples' rates.
type throughputBar struct {
	family, caseName string
	batch            int
	s                series
	rate, lo, hi     float64 // img/s; lo, hi = 0 when the samples give no span
}

// familyOrder ranks the network op kinds as the report lists the models: ViT and DeiT, then
// T2T-ViT, VOLO, Deformable DETR's transformer, the whole detector; others after, by name.
var familyOrder = []string{"vit", "t2t_vit", "volo", "ddetr_transformer", "deformable_detr"}

// familyNames are the headings of the network families in the throughput chart.
var familyNames = map[string]string{"vit": "ViT / DeiT", "t2t_vit": "T2T-ViT", "volo": "VOLO",
	"ddetr_transformer": "Deformable DETR transformer", "deformable_detr": "Deformable DETR"}

func familyRank(f string) int {
	if i := slices.Index(familyOrder, f); i >= 0 {
		return i
	}
	return len(familyOrder)
}

// throughputBars collects one bar per network case and series (machine, backend, PyTorch
// included, its reduced-precision rows a series of their own) at the largest batch measured
// for the case, grouped by family (op kind) in
// familyOrder, cases by name within a family, series in seriesOrder within a case.
func throughputBars(in Input, es []entry) []throughputBar {
	maxBatch := map[string]int{}
	for _, e := range es {
		if in.kind(e.Case) == KindNetwork && finite(e.MedianNs) && e.MedianNs > 0 {
			maxBatch[e.Case] = max(maxBatch[e.Case], e.Batch)
		}
	}
	var bars []throughputBar
	seen := map[string]bool{}
	for _, e := range es {
		b, ok := maxBatch[e.Case]
		if !ok || e.Batch != b || !finite(e.MedianNs) || e.MedianNs <= 0 || b <= 0 {
			continue
		}
		s := series{machine: e.machine, backend: e.Backend}
		if isReference(e.Backend) && e.DType != "float32" {
			s.dtype = e.DType
		}
		key := e.Case + "\x00" + s.machine + "\x00" + s.backend + "\x00" + s.dtype
		if seen[key] {
			continue // another dtype or thread count: the first (entries order) stands
		}
		seen[key] = true
		bar := throughputBar{family: in.opOf(e.Case), caseName: e.Case, batch: b, s: s, rate: float64(b) * 1e9 / e.MedianNs}
		if p10, p90, ok := p10p90(e.SamplesNs); ok && p10 > 0 {
			bar.lo, bar.hi = float64(b)*1e9/p90, float64(b)*1e9/p10
		}
		bars = append(bars, bar)
	}
	slices.SortStableFunc(bars, func(a, b throughputBar) int {
		return cmp.Or(cmp.Compare(familyRank(a.family), familyRank(b.family)), cmp.Compare(a.family, b.family),
			cmp.Compare(a.caseName, b.caseName), seriesOrder(a.s, b.s))
	})
	return bars
}

// throughputFigure draws every network's img/s on one logarithmic axis: horizontal bars,
// one per network and series side by side (vitbench, PyTorch, …), whiskers from the
// 10th to the 90th percentile of the samples' rates, the rate written at the end of each
// bar, and the networks grouped under their family's name. It returns a note instead when
// no network was timed.
func throughputFigure(in Input, es []entry) (figure, string) {
	bars := throughputBars(in, es)
	if len(bars) == 0 {
		return figure{}, "No throughput chart: no network case was timed."
	}
	p, _, slots := throughputPlot(bars)
	title := "Throughput per network (img/s, log scale)"
	caption := "Images per second (batch / median latency) of every network at the largest batch measured for it, on one " +
		"logarithmic axis; one bar per backend, side by side, whiskers from the 10th to the 90th percentile of the samples; " +
		"the speed-up over PyTorch follows vitbench's rate in parentheses. PyTorch is measured on the same machine with " +
		"the same threads. Networks are grouped by family."
	// A case's slot is tall enough for its bars: 0.27 inch for two, 0.11 inch a bar beyond.
	var all []series
	for _, b := range bars {
		if !slices.Contains(all, b.s) {
			all = append(all, b.s)
		}
	}
	slotH := vg.Inch * vg.Length(max(0.27, 0.11*float64(len(all))+0.05))
	f := figure{name: "throughput", title: title, caption: caption,
		w: vg.Inch * 9, h: vg.Inch*0.9 + vg.Length(slots)*slotH}
	f.draw = func(dc draw.Canvas) {
		p.Draw(drawTitle(dc, title))
	}
	return f, ""
}

// throughputPlot builds the one plot of the chart and returns it with its bars and its
// number of slots (one per case and one per family heading), which sets the chart's height.
func throughputPlot(bars []throughputBar) (*plot.Plot, *hbars, int) {
	var all []series
	for _, b := range bars {
		if !slices.Contains(all, b.s) {
			all = append(all, b.s)
		}
	}
	slices.SortFunc(all, seriesOrder)
	multi := slices.ContainsFunc(all, func(s series) bool { return s.machine != all[0].machine })

	hb := &hbars{}
	var ticks []plot.Tick
	slot := 0
	for i := 0; i < len(bars); {
		fam := bars[i].family
		hb.headings = append(hb.headings, heading{y: -float64(slot), text: cmp.Or(familyNames[fam], fam)})
		slot++
		for i < len(bars) && bars[i].family == fam {
			c := bars[i].caseName
			label := c
			if bars[i].batch != 1 {
				label += fmt.Sprintf(" (batch %d)", bars[i].batch)
			}
			ticks = append(ticks, plot.Tick{Value: -float64(slot), Label: label})
			var group []throughputBar
			for i < len(bars) && bars[i].caseName == c {
				group = append(group, bars[i])
				i++
			}
			h := 0.8 / float64(len(all))
			for _, b := range group {
				k := slices.Index(all, b.s)
				y := -float64(slot) + 0.4 - h*(float64(k)+0.5)
				text := fmtImgs(b.rate)
				if t := slices.IndexFunc(group, func(t throughputBar) bool {
					return t.s == series{machine: b.s.machine, backend: TorchBackend, dtype: torchDType[accuracy.Precision(b.s.backend)]}
				}); t >= 0 && !isReference(b.s.backend) {
					text += fmt.Sprintf("  (%.2f× PyTorch)", b.rate/group[t].rate)
				}
				hb.bars = append(hb.bars, hbar{y: y, h: h, v: b.rate, lo: b.lo, hi: b.hi,
					color: palette[k%len(palette)], text: text})
			}
			slot++
		}
	}
	p := plot.New()
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	p.X.Label.Text = "images per second (log scale)"
	p.Y.Tick.Marker = fixedTicks(ticks)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = 10
		a.Tick.Label.Font.Size = 9
	}
	p.Y.Min, p.Y.Max = -float64(slot)+0.5, 0.5
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, b := range hb.bars {
		lo, hi = min(lo, b.v, positiveOr(b.lo, b.v)), max(hi, b.v, b.hi)
	}
	// Room left of the shortest bar, and right of the longest for its value.
	p.X.Min, p.X.Max = lo/3, hi*12
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	p.Add(grid)
	p.Add(hb)
	p.Legend.Top = true
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(4)
	p.Legend.TextStyle = textStyle(10)
	p.Legend.ThumbnailWidth = vg.Points(14)
	for k, s := range all {
		p.Legend.Add(s.label(multi), swatch{palette[k%len(palette)]})
	}
	return p, hb, slot
}

func positiveOr(v, alt float64) float64 {
	if v > 0 {
		return v
	}
	return alt
}

// fmtImgs writes an img/s value with three significant digits (0.0445, 9.12, 1014).
func fmtImgs(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
