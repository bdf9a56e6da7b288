package report

import (
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Marker shapes of the roofline's points, one per op kind family (with the colour).
const (
	shapeCircle = iota
	shapeSquare
	shapeTriangle
	shapeDiamond
	shapeTriangleDown
	shapeCount
)

// Marker fills, one per backend of the roofline: vitbench's filled, the first reference
// backend (PyTorch) outlined, the next (NumPy) outlined with a dot in the centre.
const (
	fillSolid = iota
	fillOutline
	fillOutlineDot
)

// markGlyph draws a marker shape filled or as a 1.3-point outline: gonum's own outlined
// glyphs use 0.5-point lines, too faint to tell apart in a crowd.
type markGlyph struct {
	shape, fill int
}

// DrawGlyph implements draw.GlyphDrawer.
func (g markGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	var p vg.Path
	switch g.shape {
	case shapeCircle:
		p.Move(vg.Point{X: pt.X + r, Y: pt.Y})
		p.Arc(pt, r, 0, 2*math.Pi)
	case shapeSquare:
		s := r * 0.85
		p.Move(vg.Point{X: pt.X - s, Y: pt.Y - s})
		p.Line(vg.Point{X: pt.X + s, Y: pt.Y - s})
		p.Line(vg.Point{X: pt.X + s, Y: pt.Y + s})
		p.Line(vg.Point{X: pt.X - s, Y: pt.Y + s})
	case shapeDiamond:
		s := r * 1.2
		p.Move(vg.Point{X: pt.X, Y: pt.Y + s})
		p.Line(vg.Point{X: pt.X + s, Y: pt.Y})
		p.Line(vg.Point{X: pt.X, Y: pt.Y - s})
		p.Line(vg.Point{X: pt.X - s, Y: pt.Y})
	default: // triangles
		s := r * 1.2
		dir := vg.Length(1)
		if g.shape == shapeTriangleDown {
			dir = -1
		}
		p.Move(vg.Point{X: pt.X, Y: pt.Y + dir*s})
		p.Line(vg.Point{X: pt.X - s*0.866, Y: pt.Y - dir*s*0.5})
		p.Line(vg.Point{X: pt.X + s*0.866, Y: pt.Y - dir*s*0.5})
	}
	p.Close()
	if g.fill == fillSolid {
		c.SetColor(sty.Color)
		c.Fill(p)
		return
	}
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.3)})
	c.Stroke(p)
	if g.fill == fillOutlineDot {
		var dot vg.Path
		dot.Move(vg.Point{X: pt.X + r/3, Y: pt.Y})
		dot.Arc(pt, r/3, 0, 2*math.Pi)
		dot.Close()
		c.SetColor(sty.Color)
		c.Fill(dot)
	}
}
