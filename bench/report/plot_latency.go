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
)

// series is one set of bars or points of a chart: a backend on a machine.
type series struct{ machine, backend string }

// seriesOrder sorts series by machine, then vitbench's CPU backend first, PyTorch beside
// it, then the other backends by name.
func seriesOrder(a, b series) int {
	rank := func(s series) int {
		switch s.backend {
		case "cpu":
			return 0
		case TorchBackend:
			return 1
		}
		return 2
	}
	return cmp.Or(cmp.Compare(a.machine, b.machine), cmp.Compare(rank(a), rank(b)), cmp.Compare(a.backend, b.backend))
}

// label names a series in a legend or on an axis: "vitbench cpu", "PyTorch", prefixed
// with the machine when the chart holds several.
func (s series) label(multiMachine bool) string {
	l := "vitbench " + s.backend
	switch s.backend {
	case TorchBackend:
		l = "PyTorch"
	case NumPyBackend:
		l = "NumPy"
	case OrtBackend:
		l = "ONNX Runtime"
	}
	if multiMachine {
		l = s.machine + ": " + l
	}
	return l
}

// netBars is one tile of the latency chart: a network at one batch size and the row of
// each series measured for it.
type netBars struct {
	caseName string
	batch    int
	rows     []entry // in series order, at most one per series
}

// latencyFigure draws one tile per network case with one bar per (machine, backend): the
// median latency per call at the smallest batch measured for that network, whiskers from
// the 10th to the 90th percentile of the samples, the median written above the bar. It
// returns a note instead when no network was timed.
func latencyFigure(in Input, es []entry) (figure, string) {
	byCase := map[string][]entry{}
	var names []string
	for _, e := range es {
		if in.kind(e.Case) != KindNetwork || !finite(e.MedianNs) || e.MedianNs <= 0 {
			continue
		}
		if _, ok := byCase[e.Case]; !ok {
			names = append(names, e.Case)
		}
		byCase[e.Case] = append(byCase[e.Case], e)
	}
	if len(names) == 0 {
		return figure{}, "No latency chart: no network case was timed."
	}
	var all []series
	var tiles []netBars
	minN := math.MaxInt
	for _, name := range names {
		rows := byCase[name]
		batch := slices.MinFunc(rows, func(a, b entry) int { return cmp.Compare(a.Batch, b.Batch) }).Batch
		t := netBars{caseName: name, batch: batch}
		seen := map[series]bool{}
		for _, e := range rows {
			s := series{e.machine, e.Backend}
			if e.Batch != batch || seen[s] {
				continue
			}
			seen[s] = true
			t.rows = append(t.rows, e)
			minN = min(minN, len(e.SamplesNs))
			if !slices.Contains(all, s) {
				all = append(all, s)
			}
		}
		slices.SortFunc(t.rows, func(a, b entry) int {
			return seriesOrder(series{a.machine, a.Backend}, series{b.machine, b.Backend})
		})
		tiles = append(tiles, t)
	}
	slices.SortFunc(all, seriesOrder)
	multi := slices.ContainsFunc(all, func(s series) bool { return s.machine != all[0].machine })

	cols := min(len(tiles), 4)
	rows := (len(tiles) + cols - 1) / cols
	tileW, tileH := vg.Inch*3.3, vg.Inch*2.5
	title := "Latency per network and backend"
	caption := fmt.Sprintf("Median latency per call at the smallest batch measured for each network; whiskers span the "+
		"10th to 90th percentile of the timed samples (at least %d per bar); PyTorch is measured on the same machine "+
		"with the same threads.", max(minN, 0))
	// One or two tiles widen to leave room for the title.
	f := figure{name: "latency", title: title, caption: caption,
		w: max(tileW*vg.Length(cols), vg.Inch*6.6), h: tileH*vg.Length(rows) + vg.Inch*0.45}
	f.draw = func(dc draw.Canvas) {
		dc = drawTitle(dc, title+" (median, whiskers p10–p90)")
		grid := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(14),
			PadLeft: vg.Points(4), PadRight: vg.Points(8), PadBottom: vg.Points(4)}
		for i, t := range tiles {
			latencyTile(t, all, multi).Draw(grid.At(dc, i%cols, i/cols))
		}
	}
	return f, ""
}

// latencyTile draws one network's bars; colours follow the series' place in all.
func latencyTile(t netBars, all []series, multi bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = t.caseName
	if t.batch != 1 {
		p.Title.Text += fmt.Sprintf(" (batch %d)", t.batch)
	}
	p.Title.TextStyle.Font.Size = 11
	p.Y.Label.Text = "ms"
	p.Y.Label.TextStyle.Font.Size = 9
	p.Y.Tick.Label.Font.Size = 9
	p.X.Tick.Label.Font.Size = 9
	p.Y.Min = 0
	p.Y.Tick.Marker = linTicks{}

	width := vg.Inch * vg.Length(min(0.6, 1.8/float64(len(t.rows))))
	var names []string
	var whiskers whiskerBars
	var tops plotter.XYLabels
	top := 0.0
	for i, e := range t.rows {
		s := series{e.machine, e.Backend}
		names = append(names, s.label(multi))
		med := e.MedianNs / 1e6
		bc, err := plotter.NewBarChart(plotter.Values{med}, width)
		if err != nil {
			continue // a NaN median was filtered out before; nothing to draw
		}
		bc.XMin = float64(i)
		bc.Color = palette[slices.Index(all, s)%len(palette)]
		bc.LineStyle.Width = 0
		p.Add(bc)
		hi := med
		if lo, up, ok := p10p90(e.SamplesNs); ok {
			whiskers = append(whiskers, whisker{x: float64(i), y: med, lo: med - lo/1e6, hi: up/1e6 - med})
			hi = up / 1e6
		}
		tops.XYs = append(tops.XYs, plotter.XY{X: float64(i), Y: hi})
		tops.Labels = append(tops.Labels, fmtMs(e.MedianNs))
		top = max(top, hi)
	}
	if len(whiskers) > 0 {
		if eb, err := plotter.NewYErrorBars(whiskers); err == nil {
			eb.LineStyle.Color = darkGrey
			eb.LineStyle.Width = vg.Points(1)
			eb.CapWidth = width / 3
			p.Add(eb)
		}
	}
	if lb, err := plotter.NewLabels(tops); err == nil {
		for i := range lb.TextStyle {
			lb.TextStyle[i] = textStyle(9)
			lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
		}
		lb.Offset = vg.Point{Y: vg.Points(2)}
		p.Add(lb)
	}
	// Room above the tallest whisker for its label.
	p.Y.Max = top * 1.22
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(t.rows))-0.4
	return p
}

// whisker is one error bar: at (x, y), reaching lo below and hi above.
type whisker struct{ x, y, lo, hi float64 }

// whiskerBars adapts whiskers to plotter.NewYErrorBars.
type whiskerBars []whisker

func (w whiskerBars) Len() int                        { return len(w) }
func (w whiskerBars) XY(i int) (float64, float64)     { return w[i].x, w[i].y }
func (w whiskerBars) YError(i int) (float64, float64) { return w[i].lo, w[i].hi }

// p10p90 returns the 10th and 90th percentiles of samples (linear interpolation between
// closest ranks, as results.Summary's p90); ok is false when there are no finite samples.
func p10p90(samples []float64) (p10, p90 float64, ok bool) {
	s := make([]float64, 0, len(samples))
	for _, v := range samples {
		if finite(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return 0, 0, false
	}
	slices.Sort(s)
	return quantile(s, 0.10), quantile(s, 0.90), true
}

// quantile returns the q-quantile of the sorted, non-empty sample by linear interpolation
// between closest ranks (R-7, NumPy's default).
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}
