package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// rooflinePoint is one timed case on the roofline: its arithmetic intensity (FLOP per byte
// moved, 2·MACs / bytes) and achieved GFLOP/s (2·MACs / median).
type rooflinePoint struct {
	op, backend, caseName string
	macs                  int64
	ai, gflops            float64
}

// onHostCPU reports whether a backend's rows run on the host CPU, whose ceilings the
// roofline draws (vitbench's cpu, PyTorch, NumPy: everything but the GPU).
func onHostCPU(backend string) bool { return !strings.HasPrefix(backend, "cuda") }

// opOf returns the op kind of a case: from Input.Cases, else the case name's first part.
func (in Input) opOf(caseName string) string {
	if c, ok := in.Cases[caseName]; ok && c.Op != "" {
		return c.Op
	}
	op, _, _ := strings.Cut(caseName, "/")
	return op
}

// rooflinePoints collects the points of every row run on the host CPU that records MACs
// and bytes, and counts the rows left out for lack of them.
func rooflinePoints(in Input, es []entry) (pts []rooflinePoint, skipped int) {
	for _, e := range es {
		if !onHostCPU(e.Backend) || !finite(e.MedianNs) || e.MedianNs <= 0 {
			continue
		}
		if e.MACs <= 0 || e.Bytes <= 0 {
			skipped++
			continue
		}
		flops := 2 * float64(e.MACs)
		pts = append(pts, rooflinePoint{op: in.opOf(e.Case), backend: e.Backend, caseName: e.Case, macs: e.MACs,
			ai: flops / float64(e.Bytes), gflops: flops / e.MedianNs})
	}
	return pts, skipped
}

// rooflineFigure draws arithmetic intensity against achieved GFLOP/s, log–log, for every
// timed case run on the host CPU: colour and shape say the op kind, the fill says the
// backend (backendFills). The measured compute ceiling
// (Input.Roof.GFLOPs) and bandwidth ceiling (Input.Roof.GBps) are drawn as the roof
// min(peak, bandwidth·intensity). It returns a note instead when no row has both MACs and
// bytes.
func rooflineFigure(in Input, es []entry) (figure, string) {
	pts, skipped := rooflinePoints(in, es)
	if len(pts) == 0 {
		return figure{}, "No roofline chart: no timed case on the CPU records both MACs and bytes."
	}
	var ops, backends []string
	for _, p := range pts {
		ops = appendNew(ops, p.op)
		backends = appendNew(backends, p.backend)
	}
	slices.Sort(ops)
	slices.SortFunc(backends, func(a, b string) int { return seriesOrder(series{backend: a}, series{backend: b}) })

	fills := backendFills(backends)
	roof := in.Roof
	title := "Roofline: achieved GFLOP/s against arithmetic intensity"
	var caption strings.Builder
	caption.WriteString("Each point is one timed case: x = 2·MACs / bytes moved (FLOP/byte), y = 2·MACs / median latency; " +
		"colour and shape give the op kind, the fill the backend (legend); the biggest case of each op kind (most MACs) is named beside its vitbench point")
	var refs []string
	for _, b := range backends {
		if isReference(b) {
			refs = append(refs, series{backend: b}.label(false))
		}
	}
	if len(refs) > 0 {
		fmt.Fprintf(&caption, "; %s measured on the same machine", strings.Join(refs, " and "))
	}
	caption.WriteString(". ")
	if roof.GFLOPs > 0 || roof.GBps > 0 {
		fmt.Fprintf(&caption, "The roof is min(compute peak, bandwidth × intensity) as measured by `vitbench peak`%s",
			threadsNote(roof.Threads))
		if roof.Source != "" {
			fmt.Fprintf(&caption, ", from %s", roof.Source)
		}
		caption.WriteString(".")
	} else {
		caption.WriteString("No ceilings: the machine's peak was not given (vitbench report -peak peak.json).")
	}
	if skipped > 0 {
		fmt.Fprintf(&caption, " %d rows without MACs or bytes are not shown.", skipped)
	}

	f := figure{name: "roofline", title: title, caption: caption.String(), w: vg.Inch * 11, h: vg.Inch * 7.4}
	f.draw = func(dc draw.Canvas) {
		dc = drawTitle(dc, title)
		p := plot.New()
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
		p.X.Label.Text = "arithmetic intensity, FLOP/byte (2·MACs / bytes)"
		p.Y.Label.Text = "achieved GFLOP/s (2·MACs / median)"
		for _, a := range []*plot.Axis{&p.X, &p.Y} {
			a.Label.TextStyle.Font.Size = 11
			a.Tick.Label.Font.Size = 10
		}
		p.Add(plotter.NewGrid())
		setLogRange(p, pts, roof)

		legend := plot.NewLegend()
		legend.TextStyle = textStyle(10)
		legend.Top, legend.Left = true, true
		legend.Padding = vg.Points(1.5)
		legend.ThumbnailWidth = vg.Points(14)
		roofLine, roofLabels := addRoof(p, &legend, roof)
		styles := opStyles(ops)
		for _, op := range ops {
			st := styles[op]
			g := draw.GlyphStyle{Color: withAlpha(palette[st.color], 0xe0), Radius: vg.Points(3.6)}
			shape := st.shape
			for _, b := range backends {
				var xys plotter.XYs
				for _, pt := range pts {
					if pt.op == op && pt.backend == b {
						xys = append(xys, plotter.XY{X: pt.ai, Y: pt.gflops})
					}
				}
				if len(xys) == 0 {
					continue
				}
				sc, err := plotter.NewScatter(xys)
				if err != nil {
					continue
				}
				sc.GlyphStyle = g
				sc.GlyphStyle.Shape = markGlyph{shape: shape, fill: fills[b]}
				p.Add(sc)
			}
			lg := g
			lg.Shape = markGlyph{shape: shape}
			legend.Add(op, glyphThumb{lg})
		}
		names := namedLabels(pts)
		names.lineLabels = roofLabels
		if roofLine != nil {
			names.lines = []plotter.XYs{roofLine}
		}
		p.Add(names)
		legend.Add("")
		for _, b := range backends {
			g := draw.GlyphStyle{Color: darkGrey, Radius: vg.Points(3.6), Shape: markGlyph{fill: fills[b]}}
			legend.Add(series{backend: b}.label(false), glyphThumb{g})
		}

		// The legend sits to the right of the plot, outside the data.
		lw := legend.Rectangle(dc).Size().X + vg.Points(16)
		plotArea := draw.Crop(dc, 0, -lw, 0, 0)
		p.Draw(plotArea)
		legArea := draw.Crop(dc, dc.Size().X-lw+vg.Points(8), 0, 0, -vg.Points(10))
		legend.Draw(legArea)
	}
	return f, ""
}

// opStyle is the look of an op kind's points: an index into palette and a marker shape.
type opStyle struct{ color, shape int }

// opStyles gives each op kind, in the order given, its colour and marker: colour i mod 10
// and shape (i + i/10) mod 5, so that kinds sharing a colour differ in shape, neighbours in
// the legend differ in both, and up to 50 kinds get distinct pairs (then they repeat).
func opStyles(ops []string) map[string]opStyle {
	m := map[string]opStyle{}
	for i, op := range ops {
		m[op] = opStyle{color: i % len(palette), shape: (i + i/len(palette)) % shapeCount}
	}
	return m
}

// namedLabels names the case with the most MACs of each op kind among vitbench's points
// (the biggest component of each kind, the biggest network of each family) next to its
// point, clear of the other points and labels.
func namedLabels(pts []rooflinePoint) pointLabels {
	best := map[string]rooflinePoint{}
	var order []string
	for _, pt := range pts {
		if isReference(pt.backend) {
			continue
		}
		b, ok := best[pt.op]
		if !ok {
			order = append(order, pt.op)
		}
		if !ok || pt.macs > b.macs || (pt.macs == b.macs && pt.caseName < b.caseName) {
			best[pt.op] = pt
		}
	}
	// Place the biggest first: they get the nearest free spots.
	slices.SortFunc(order, func(a, b string) int { return cmp.Compare(best[b].macs, best[a].macs) })
	var pl pointLabels
	for _, op := range order {
		pt := best[op]
		pl.at = append(pl.at, plotter.XY{X: pt.ai, Y: pt.gflops})
		pl.texts = append(pl.texts, pt.caseName)
	}
	for _, pt := range pts {
		pl.all = append(pl.all, plotter.XY{X: pt.ai, Y: pt.gflops})
	}
	return pl
}

// backendFills gives vitbench's backends solid markers and each reference backend the
// next outlined style, in the order given.
func backendFills(backends []string) map[string]int {
	m := map[string]int{}
	next := fillOutline
	for _, b := range backends {
		if !isReference(b) {
			m[b] = fillSolid
			continue
		}
		m[b] = next
		next = min(next+1, fillOutlineDot)
	}
	return m
}

// threadsNote returns " (N threads)" when n is known.
func threadsNote(n int) string {
	switch {
	case n == 1:
		return " (1 thread)"
	case n > 1:
		return fmt.Sprintf(" (%d threads)", n)
	}
	return ""
}

// setLogRange sets both axes to cover every point, the compute peak and a decade of the
// bandwidth slope left of the knee, with a margin of a factor 1.6 (a fifth of a decade) on
// each side.
func setLogRange(p *plot.Plot, pts []rooflinePoint, roof Roof) {
	const margin = 1.6
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, pt := range pts {
		xmin, xmax = min(xmin, pt.ai), max(xmax, pt.ai)
		ymin, ymax = min(ymin, pt.gflops), max(ymax, pt.gflops)
	}
	if roof.GFLOPs > 0 {
		ymax = max(ymax, roof.GFLOPs)
		if roof.GBps > 0 {
			// A decade of the bandwidth slope left of the knee leaves room for its label.
			knee := roof.GFLOPs / roof.GBps
			xmin, xmax = min(xmin, knee/10), max(xmax, knee)
			ymin = min(ymin, roof.GBps*xmin)
		}
	}
	p.X.Min, p.X.Max = xmin/margin, xmax*margin
	p.Y.Min, p.Y.Max = ymin/margin, ymax*margin*2.5 // room for the peak's label and the case names
}

// addRoof draws the ceilings: the bandwidth slope and the compute peak, joined at the knee,
// each labelled with its value along the line, and adds them to the legend. It returns
// the line and its labels (none without ceilings), for the case names to keep clear of.
func addRoof(p *plot.Plot, legend *plot.Legend, roof Roof) (plotter.XYs, []lineLabel) {
	x0, x1 := p.X.Min, p.X.Max
	style := draw.LineStyle{Color: color.RGBA{0x33, 0x33, 0x33, 0xff}, Width: vg.Points(1.6)}
	at := func(x float64) float64 {
		switch {
		case roof.GFLOPs > 0 && roof.GBps > 0:
			return min(roof.GFLOPs, roof.GBps*x)
		case roof.GFLOPs > 0:
			return roof.GFLOPs
		}
		return roof.GBps * x
	}
	if roof.GFLOPs <= 0 && roof.GBps <= 0 {
		return nil, nil
	}
	xs := []float64{x0}
	if roof.GFLOPs > 0 && roof.GBps > 0 {
		if knee := roof.GFLOPs / roof.GBps; knee > x0 && knee < x1 {
			xs = append(xs, knee)
		}
	}
	xs = append(xs, x1)
	var line plotter.XYs
	for _, x := range xs {
		line = append(line, plotter.XY{X: x, Y: at(x)})
	}
	l, err := plotter.NewLine(line)
	if err != nil {
		return nil, nil
	}
	l.LineStyle = style
	p.Add(l)
	var labels []lineLabel
	if roof.GFLOPs > 0 {
		labels = append(labels, lineLabel{from: plotter.XY{X: x1, Y: roof.GFLOPs}, to: plotter.XY{X: x1 * 2, Y: roof.GFLOPs}, right: true,
			text: fmt.Sprintf("compute peak %.0f GFLOP/s", roof.GFLOPs)})
	}
	if roof.GBps > 0 {
		// Label the slope just left of the knee (or of the right edge without a peak).
		x := x1
		if roof.GFLOPs > 0 {
			x = min(x1, roof.GFLOPs/roof.GBps)
		}
		labels = append(labels, lineLabel{from: plotter.XY{X: x, Y: roof.GBps * x}, to: plotter.XY{X: x * 2, Y: roof.GBps * x * 2}, right: true,
			text: fmt.Sprintf("memory %.1f GB/s", roof.GBps)})
	}
	for _, lb := range labels {
		p.Add(lb)
	}
	legend.Add("measured ceilings", l)
	return line, labels
}

// lineLabel writes text just above a line through from and to, rotated to follow it on
// the canvas; right aligns the text's end with from instead of its start.
type lineLabel struct {
	from, to plotter.XY
	text     string
	right    bool
}

// Plot implements plot.Plotter.
func (l lineLabel) Plot(c draw.Canvas, p *plot.Plot) {
	pt, sty := l.place(c, p)
	c.FillText(sty, pt, l.text)
}

// box returns the canvas rectangle the text covers (around its rotated outline).
func (l lineLabel) box(c draw.Canvas, p *plot.Plot) vg.Rectangle {
	pt, sty := l.place(c, p)
	size := sty.Rectangle(l.text).Size()
	cos, sin := vg.Length(math.Cos(sty.Rotation)), vg.Length(math.Sin(sty.Rotation))
	along := size.X
	if sty.XAlign == draw.XRight {
		along = -along
	}
	corners := []vg.Point{pt, {X: pt.X + along*cos, Y: pt.Y + along*sin}}
	for _, q := range corners[:2] {
		corners = append(corners, vg.Point{X: q.X - size.Y*sin, Y: q.Y + size.Y*cos})
	}
	r := vg.Rectangle{Min: pt, Max: pt}
	for _, q := range corners {
		r.Min.X, r.Min.Y = min(r.Min.X, q.X), min(r.Min.Y, q.Y)
		r.Max.X, r.Max.Y = max(r.Max.X, q.X), max(r.Max.Y, q.Y)
	}
	return r
}

// place returns where the text is anchored and its style (rotation, alignment).
func (l lineLabel) place(c draw.Canvas, p *plot.Plot) (vg.Point, text.Style) {
	tx, ty := p.Transforms(&c)
	x0, y0 := tx(l.from.X), ty(l.from.Y)
	angle := math.Atan2(float64(ty(l.to.Y)-y0), float64(tx(l.to.X)-x0))
	sty := textStyle(10)
	sty.Color = darkGrey
	sty.Rotation = angle
	sty.YAlign = draw.YBottom
	pad := vg.Points(3)
	if l.right {
		// End the text a little before from, along the line.
		sty.XAlign = draw.XRight
		x0 -= vg.Points(8) * vg.Length(math.Cos(angle))
		y0 -= vg.Points(8) * vg.Length(math.Sin(angle))
	}
	// Shift perpendicular to the line so the text sits above it.
	pt := vg.Point{X: x0 - pad*vg.Length(math.Sin(angle)), Y: y0 + pad*vg.Length(math.Cos(angle))}
	return pt, sty
}

// glyphThumb shows a glyph as a legend thumbnail.
type glyphThumb struct{ g draw.GlyphStyle }

// Thumbnail implements plot.Thumbnailer.
func (t glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(t.g, c.Center()) }

// withAlpha returns c with alpha a, premultiplied as color.RGBA requires.
func withAlpha(c color.RGBA, a uint8) color.RGBA {
	f := float64(a) / 255
	return color.RGBA{uint8(float64(c.R) * f), uint8(float64(c.G) * f), uint8(float64(c.B) * f), a}
}
