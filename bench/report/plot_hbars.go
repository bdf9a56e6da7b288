package report

import (
	"image/color"

	stdfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// hbar is one horizontal bar in data coordinates: centred at y, h high, from the left edge
// of the plot to v, a whisker from lo to hi (none when hi is 0), text written after its end.
type hbar struct {
	y, h, v, lo, hi float64
	color           color.Color
	text            string
}

// heading is a group's name, written at the left edge of the plot at height y.
type heading struct {
	y    float64
	text string
}

// hbars draws bars that start at the left edge of the plot, so that they work on a
// logarithmic axis (where gonum's bar charts, which start at 0, cannot), and the group
// headings with a thin rule above each but the first.
type hbars struct {
	bars     []hbar
	headings []heading
}

// Plot implements plot.Plotter.
func (hb *hbars) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	clampX := func(x vg.Length) vg.Length { return min(max(x, c.Min.X), c.Max.X) }
	valueStyle := textStyle(8)
	valueStyle.YAlign = draw.YCenter
	for _, b := range hb.bars {
		y0, y1 := ty(b.y-b.h/2), ty(b.y+b.h/2)
		x1 := clampX(tx(b.v))
		c.SetColor(b.color)
		c.Fill(vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: y0}, Max: vg.Point{X: x1, Y: y1}}.Path())
		end := x1
		if b.hi > 0 {
			lo, hi := clampX(tx(b.lo)), clampX(tx(b.hi))
			ym, cap := ty(b.y), (y1-y0)/3
			ls := draw.LineStyle{Color: darkGrey, Width: vg.Points(0.8)}
			c.StrokeLine2(ls, lo, ym, hi, ym)
			c.StrokeLine2(ls, lo, ym-cap, lo, ym+cap)
			c.StrokeLine2(ls, hi, ym-cap, hi, ym+cap)
			end = max(end, hi)
		}
		c.FillText(valueStyle, vg.Point{X: end + vg.Points(3), Y: ty(b.y)}, b.text)
	}
	headStyle := textStyle(10)
	bold := plot.DefaultFont
	bold.Weight = stdfont.WeightBold
	headStyle.Font = font.From(bold, 10)
	headStyle.YAlign = draw.YCenter
	for i, h := range hb.headings {
		y := ty(h.y)
		if i > 0 {
			rule := ty(h.y + 0.5)
			c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 0xaa}, Width: vg.Points(0.6)}, c.Min.X, rule, c.Max.X, rule)
		}
		c.FillText(headStyle, vg.Point{X: c.Min.X + vg.Points(4), Y: y}, h.text)
	}
}

// fixedTicks is an axis's ticks given in advance (the case names of a bar chart).
type fixedTicks []plot.Tick

// Ticks implements plot.Ticker.
func (t fixedTicks) Ticks(_, _ float64) []plot.Tick { return t }

// swatch is a legend thumbnail filled with one colour.
type swatch struct{ c color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	c.SetColor(s.c)
	c.Fill(c.Rectangle.Path())
}
