package report

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"vitbench/bench/results"
)

// FigureRef is a chart written beside a report: its file, relative to the report's
// directory (slash-separated, as Markdown links want it), its title and a caption saying
// what it shows.
type FigureRef struct {
	Path, Title, Caption string
}

// figure is a chart ready to be drawn: its size and a function drawing it on a canvas of
// that size.
type figure struct {
	name, title, caption string
	w, h                 vg.Length
	draw                 func(dc draw.Canvas)
}

// figureDPI is the resolution of the PNG files: 1 inch = 110 pixels keeps 9-point tick
// labels crisp at the widths Markdown viewers show.
const figureDPI = 110

// WriteFigures draws the report's charts — every network's throughput on one axis per
// backend, and the roofline — as PNG files in dir named prefix-throughput.png and
// prefix-roofline.png, each
// written atomically, and returns them as references relative to dir. A chart without data
// is not written; notes then says, one line per chart, why. The images hold no timestamp:
// the same input gives the same bytes.
func WriteFigures(dir, prefix string, in Input) (refs []FigureRef, notes []string, err error) {
	es := in.entries()
	var figs []figure
	for _, build := range []func(Input, []entry) (figure, string){throughputFigure, rooflineFigure} {
		f, note := build(in, es)
		if note != "" {
			notes = append(notes, note)
			continue
		}
		figs = append(figs, f)
	}
	for _, f := range figs {
		name := prefix + "-" + f.name + ".png"
		if err := results.WriteFileAtomic(filepath.Join(dir, name), f.writePNG); err != nil {
			return refs, notes, fmt.Errorf("%s: %v", f.name, err)
		}
		refs = append(refs, FigureRef{Path: filepath.ToSlash(name), Title: f.title, Caption: f.caption})
	}
	return refs, notes, nil
}

// writePNG draws f on a white canvas and encodes it as PNG.
func (f figure) writePNG(w io.Writer) error {
	c := vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(figureDPI), vgimg.UseBackgroundColor(color.White))
	f.draw(draw.New(c))
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// palette is Tableau 10: ten colours that stay distinct for most colour-blind readers.
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, // blue
	{0xf2, 0x8e, 0x2b, 0xff}, // orange
	{0x59, 0xa1, 0x4f, 0xff}, // green
	{0xe1, 0x57, 0x59, 0xff}, // red
	{0xb0, 0x7a, 0xa1, 0xff}, // purple
	{0x9c, 0x75, 0x5f, 0xff}, // brown
	{0x76, 0xb7, 0xb2, 0xff}, // teal
	{0xed, 0xc9, 0x48, 0xff}, // yellow
	{0xff, 0x9d, 0xa7, 0xff}, // pink
	{0xba, 0xb0, 0xac, 0xff}, // grey
}

var (
	black    = color.Black
	darkGrey = color.Gray{Y: 0x55}
)

// textStyle returns plain text of the default font at size points.
func textStyle(size vg.Length) text.Style {
	return text.Style{Color: black, Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler}
}

// drawTitle writes a bold-sized title centred at the top of dc and returns the canvas
// left below it.
func drawTitle(dc draw.Canvas, title string) draw.Canvas {
	sty := textStyle(13)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	pad := vg.Points(6)
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - pad}, title)
	h := sty.Rectangle(title).Size().Y + 2*pad
	return draw.Crop(dc, 0, 0, 0, -h)
}
