package report

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// decodePNG reads a PNG and counts its pixels that are neither white nor grey: the bars,
// points and lines drawn in colour.
func decodePNG(t *testing.T, path string) (image.Image, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	coloured := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if max(r, g, bl)-min(r, g, bl) > 0x2000 {
				coloured++
			}
		}
	}
	return img, coloured
}

func TestWriteFigures(t *testing.T) {
	in := sampleInput()
	in.Roof = Roof{GFLOPs: 440, GBps: 45, Threads: 2}
	dir := t.TempDir()
	refs, notes, err := WriteFigures(dir, "report", in)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || len(notes) != 0 {
		t.Fatalf("refs %+v notes %q", refs, notes)
	}
	for _, r := range refs {
		img, coloured := decodePNG(t, filepath.Join(dir, r.Path))
		if w := img.Bounds().Dx(); w < 700 {
			t.Errorf("%s: %d pixels wide", r.Path, w)
		}
		if coloured < 200 {
			t.Errorf("%s: %d coloured pixels: an empty chart?", r.Path, coloured)
		}
		if r.Title == "" || r.Caption == "" || strings.Contains(r.Path, "/") {
			t.Errorf("ref %+v", r)
		}
	}
	// The same input draws the same bytes (no timestamps).
	first, _ := os.ReadFile(filepath.Join(dir, refs[1].Path))
	again := t.TempDir()
	if _, _, err := WriteFigures(again, "report", in); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(again, refs[1].Path))
	if !bytes.Equal(first, second) {
		t.Errorf("%s differs between two identical runs", refs[1].Path)
	}

	in.Figures = refs
	var buf bytes.Buffer
	if err := Markdown(&buf, in); err != nil {
		t.Fatal(err)
	}
	plots := sectionOf(t, buf.String(), "Plots")
	for _, s := range []string{"![Throughput per network (img/s, log scale)](report-throughput.png)",
		"](report-roofline.png)", "whiskers from the 10th to the 90th percentile", "(2 threads)"} {
		if !strings.Contains(plots, s) {
			t.Errorf("Plots section lacks %q:\n%s", s, plots)
		}
	}
}

// TestWriteFiguresWithoutData: a chart with no data is not written, and the report says
// so in one line.
func TestWriteFiguresWithoutData(t *testing.T) {
	dir := t.TempDir()
	// Components only, without MACs: neither chart has data.
	in := Input{Bench: []results.BenchFile{{Rows: []results.BenchRow{row("layernorm/x", "cpu", 1, 1, 1e6, 0)}}}}
	refs, notes, err := WriteFigures(dir, "r", in)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 0 || len(notes) != 2 {
		t.Fatalf("refs %+v notes %q", refs, notes)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("files written: %v", files)
	}
	in.FigureNotes = notes
	var buf bytes.Buffer
	Markdown(&buf, in)
	for _, s := range []string{"- No throughput chart: no network case was timed.\n",
		"- No roofline chart: no timed case on the CPU records both MACs and bytes.\n"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, buf.String())
		}
	}
}

func TestP10P90(t *testing.T) {
	lo, hi, ok := p10p90([]float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10, nan()})
	if !ok || lo != 1.9 || hi != 9.1 {
		t.Errorf("p10p90 = %v, %v, %v; want 1.9, 9.1", lo, hi, ok)
	}
	if _, _, ok := p10p90(nil); ok {
		t.Error("no samples: ok")
	}
}

func TestTicks(t *testing.T) {
	var labels []string
	for _, tk := range (linTicks{}).Ticks(0, 250) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0 50 100 150 200 250" {
		t.Errorf("linear labels %q", got)
	}
	labels = labels[:0]
	for _, tk := range (logTicks{}).Ticks(0.3, 2000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "1 10 100 1000" {
		t.Errorf("log labels %q", got)
	}
}

func nan() float64 { return math.NaN() }
