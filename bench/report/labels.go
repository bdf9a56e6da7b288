package report

import (
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// labelBox is a label to place on a chart: the point it names (canvas coordinates) and the
// size of its text.
type labelBox struct {
	at   vg.Point
	w, h vg.Length
}

// placedLabel is where placeLabels put a label: the rectangle of its text, and whether it
// sits away from its point (then a leader line joins them).
type placedLabel struct {
	rect   vg.Rectangle
	leader bool
}

// labelDistances and labelAngles are the candidate positions of a label around its point,
// nearest first: right, up-right, up, …, at each distance in turn.
var (
	labelDistances = []vg.Length{vg.Points(5), vg.Points(14), vg.Points(26), vg.Points(42), vg.Points(60),
		vg.Points(80), vg.Points(105), vg.Points(135), vg.Points(170)}
	labelAngles = []float64{0, 45, 315, 180, 135, 225, 90, 270, 22.5, 337.5, 157.5, 202.5, 67.5, 112.5, 247.5, 292.5}
)

// placeLabels places each label, in order, at the first candidate position around its point
// whose text stays inside bounds and overlaps neither an earlier label nor any of obstacles
// (the markers, lines and other text of the chart); a label with no such position goes at
// the first candidate that stays inside bounds (overlapping), or right of its point. The
// result has one entry per label.
func placeLabels(labels []labelBox, obstacles []vg.Rectangle, bounds vg.Rectangle) []placedLabel {
	out := make([]placedLabel, len(labels))
	taken := slices.Clone(obstacles)
	for i, l := range labels {
		var fallback *vg.Rectangle
		found := false
		for di, d := range labelDistances {
			for _, a := range labelAngles {
				r := labelRect(l, d, a)
				if !inside(r, bounds) {
					continue
				}
				if fallback == nil {
					fallback = &r
				}
				if overlapsAny(r, taken) {
					continue
				}
				out[i], found = placedLabel{rect: r, leader: di > 0}, true
				break
			}
			if found {
				break
			}
		}
		if !found {
			r := labelRect(l, labelDistances[0], 0)
			if fallback != nil {
				r = *fallback
			}
			out[i] = placedLabel{rect: r}
		}
		taken = append(taken, out[i].rect)
	}
	return out
}

// labelRect is the rectangle of l's text at distance d from its point in direction deg
// (degrees, counter-clockwise from the right): the text's nearest edge or corner faces
// the point.
func labelRect(l labelBox, d vg.Length, deg float64) vg.Rectangle {
	rad := deg * math.Pi / 180
	cx, cy := l.at.X+d*vg.Length(math.Cos(rad)), l.at.Y+d*vg.Length(math.Sin(rad))
	// Shift the text's centre so that it lies beyond (cx, cy) in the same direction.
	cos, sin := math.Cos(rad), math.Sin(rad)
	ox := vg.Length(sign(cos)) * l.w / 2
	oy := vg.Length(sign(sin)) * l.h / 2
	c := vg.Point{X: cx + ox, Y: cy + oy}
	return vg.Rectangle{Min: vg.Point{X: c.X - l.w/2, Y: c.Y - l.h/2}, Max: vg.Point{X: c.X + l.w/2, Y: c.Y + l.h/2}}
}

// sign is -1, 0 or 1 for v < 0, v ≈ 0 and v > 0 (|v| < 1e-9 counts as 0).
func sign(v float64) float64 {
	switch {
	case v > 1e-9:
		return 1
	case v < -1e-9:
		return -1
	}
	return 0
}

func inside(r, b vg.Rectangle) bool {
	return r.Min.X >= b.Min.X && r.Min.Y >= b.Min.Y && r.Max.X <= b.Max.X && r.Max.Y <= b.Max.Y
}

func overlapsAny(r vg.Rectangle, others []vg.Rectangle) bool {
	for _, o := range others {
		if r.Min.X < o.Max.X && o.Min.X < r.Max.X && r.Min.Y < o.Max.Y && o.Min.Y < r.Max.Y {
			return true
		}
	}
	return false
}

// square returns the square of half-side r around p.
func square(p vg.Point, r vg.Length) vg.Rectangle {
	return vg.Rectangle{Min: vg.Point{X: p.X - r, Y: p.Y - r}, Max: vg.Point{X: p.X + r, Y: p.Y + r}}
}

// pointLabels writes texts next to points of a log–log or linear plot, placed by
// placeLabels so that they avoid each other, the markers of all, the lines and the line
// labels, with a thin leader line from a label set away from its point and a ring around
// each labelled point.
type pointLabels struct {
	at         []plotter.XY // the labelled points, data coordinates
	texts      []string
	all        []plotter.XY // every marker of the plot, to keep clear of
	lines      []plotter.XYs
	lineLabels []lineLabel
}

// Plot implements plot.Plotter.
func (pl pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	sty := textStyle(8)
	sty.Color = black
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	var boxes []labelBox
	for i, xy := range pl.at {
		size := sty.Rectangle(pl.texts[i]).Size()
		boxes = append(boxes, labelBox{at: vg.Point{X: tx(xy.X), Y: ty(xy.Y)}, w: size.X + vg.Points(2), h: size.Y})
	}
	var obstacles []vg.Rectangle
	for _, xy := range pl.all {
		obstacles = append(obstacles, square(vg.Point{X: tx(xy.X), Y: ty(xy.Y)}, vg.Points(4)))
	}
	for _, line := range pl.lines {
		for i := 1; i < len(line); i++ {
			a := vg.Point{X: tx(line[i-1].X), Y: ty(line[i-1].Y)}
			b := vg.Point{X: tx(line[i].X), Y: ty(line[i].Y)}
			n := int(math.Hypot(float64(b.X-a.X), float64(b.Y-a.Y))/3) + 1
			for k := 0; k <= n; k++ {
				f := vg.Length(k) / vg.Length(n)
				obstacles = append(obstacles, square(vg.Point{X: a.X + f*(b.X-a.X), Y: a.Y + f*(b.Y-a.Y)}, vg.Points(1.5)))
			}
		}
	}
	for _, l := range pl.lineLabels {
		obstacles = append(obstacles, l.box(c, p))
	}
	placed := placeLabels(boxes, obstacles, c.Rectangle)
	lead := draw.LineStyle{Color: darkGrey, Width: vg.Points(0.5)}
	ring := draw.GlyphStyle{Color: black, Radius: vg.Points(5.5), Shape: draw.RingGlyph{}}
	for i, q := range placed {
		c.DrawGlyph(ring, boxes[i].at)
		if q.leader {
			// From the point to the nearest point of the text's rectangle.
			at := boxes[i].at
			near := vg.Point{X: min(max(at.X, q.rect.Min.X), q.rect.Max.X), Y: min(max(at.Y, q.rect.Min.Y), q.rect.Max.Y)}
			c.StrokeLine2(lead, at.X, at.Y, near.X, near.Y)
		}
		c.FillText(sty, vg.Point{X: q.rect.Min.X + vg.Points(1), Y: q.rect.Min.Y}, pl.texts[i])
	}
}
