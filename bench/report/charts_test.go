package report

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"vitbench/bench/results"
)

func TestOpStylesDistinct(t *testing.T) {
	for _, n := range []int{1, 19, 50} {
		var ops []string
		for i := range n {
			ops = append(ops, fmt.Sprintf("op%02d", i))
		}
		st := opStyles(ops)
		seen := map[opStyle]string{}
		for i, op := range ops {
			s := st[op]
			if other, dup := seen[s]; dup {
				t.Errorf("%d kinds: %s and %s share colour %d and shape %d", n, other, op, s.color, s.shape)
			}
			seen[s] = op
			if s.shape < 0 || s.shape >= shapeCount || s.color < 0 || s.color >= len(palette) {
				t.Errorf("%s: style %+v out of range", op, s)
			}
			if i > 0 && (st[ops[i-1]].color == s.color || st[ops[i-1]].shape == s.shape) {
				t.Errorf("legend neighbours %s and %s share a colour or a shape", ops[i-1], op)
			}
		}
	}
}

func TestNamedLabels(t *testing.T) {
	pts := []rooflinePoint{
		{op: "gemm", backend: "cpu", caseName: "gemm/512", macs: 1e8, ai: 10, gflops: 100},
		{op: "gemm", backend: "cpu", caseName: "gemm/2048", macs: 8e9, ai: 300, gflops: 400},
		{op: "gemm", backend: "torch", caseName: "gemm/4096", macs: 6e10, ai: 600, gflops: 300},
		{op: "vit", backend: "cpu", caseName: "vit_b16", macs: 1.7e10, ai: 100, gflops: 200},
	}
	pl := namedLabels(pts)
	if got := strings.Join(pl.texts, " "); got != "vit_b16 gemm/2048" {
		t.Errorf("named %q, want the biggest vitbench case of each kind, biggest first: vit_b16 gemm/2048", got)
	}
	if len(pl.all) != len(pts) {
		t.Errorf("%d markers to avoid, want %d", len(pl.all), len(pts))
	}
}

func TestPlaceLabels(t *testing.T) {
	bounds := vg.Rectangle{Max: vg.Point{X: 400, Y: 300}}
	if got := placeLabels(nil, nil, bounds); len(got) != 0 {
		t.Errorf("no labels: %v", got)
	}
	one := []labelBox{{at: vg.Point{X: 100, Y: 100}, w: 40, h: 8}}
	got := placeLabels(one, nil, bounds)
	if len(got) != 1 || got[0].leader || got[0].rect.Min.X <= 100 || !inside(got[0].rect, bounds) {
		t.Errorf("one free label: %+v, want it just right of its point", got)
	}
	// A marker right of the point and a label at the right edge: both move, inside the
	// bounds, overlapping nothing.
	obst := []vg.Rectangle{square(vg.Point{X: 115, Y: 102}, 4)}
	two := append(one, labelBox{at: vg.Point{X: 395, Y: 150}, w: 60, h: 8}, labelBox{at: vg.Point{X: 101, Y: 101}, w: 40, h: 8})
	got = placeLabels(two, obst, bounds)
	for i, p := range got {
		if !inside(p.rect, bounds) {
			t.Errorf("label %d outside the bounds: %+v", i, p.rect)
		}
		if overlapsAny(p.rect, obst) {
			t.Errorf("label %d over the marker: %+v", i, p.rect)
		}
		for j := range i {
			if overlapsAny(p.rect, []vg.Rectangle{got[j].rect}) {
				t.Errorf("labels %d and %d overlap: %+v %+v", j, i, got[j].rect, p.rect)
			}
		}
	}
	// A point inside a crowd: its label goes beyond it, with a leader line.
	crowd := []vg.Rectangle{square(vg.Point{X: 300, Y: 200}, 30)}
	got = placeLabels([]labelBox{{at: vg.Point{X: 300, Y: 200}, w: 40, h: 8}}, crowd, bounds)
	if !got[0].leader || overlapsAny(got[0].rect, crowd) {
		t.Errorf("crowded label %+v: want it clear of the crowd with a leader line", got[0])
	}
	// No room at all: a label is still placed, once per label.
	tiny := vg.Rectangle{Max: vg.Point{X: 10, Y: 10}}
	if got := placeLabels(two, obst, tiny); len(got) != 3 {
		t.Errorf("no room: %d placements for 3 labels", len(got))
	}
}

// TestRooflineFewCases draws the roofline of one case (and of two on one point) with and
// without ceilings: the labels find a place and nothing panics.
func TestRooflineFewCases(t *testing.T) {
	for name, rows := range map[string][]results.BenchRow{
		"one":  {row("gemm/512", "cpu", 1, 2, 1e6, 1e8)},
		"same": {row("gemm/512", "cpu", 1, 2, 1e6, 1e8), row("gemm/512", "torch", 1, 2, 1e6, 1e8)},
	} {
		for _, roof := range []Roof{{}, {GFLOPs: 400, GBps: 50}} {
			in := Input{Bench: []results.BenchFile{{Rows: rows}}, Roof: roof}
			dir := t.TempDir()
			refs, _, err := WriteFigures(dir, "r", in)
			if err != nil || len(refs) != 1 {
				t.Fatalf("%s: refs %v, err %v", name, refs, err)
			}
			if _, coloured := decodePNG(t, filepath.Join(dir, refs[0].Path)); coloured < 20 {
				t.Errorf("%s: %d coloured pixels", name, coloured)
			}
		}
	}
	// Zero cases: no chart, a note.
	if _, note := rooflineFigure(Input{}, nil); note == "" {
		t.Error("no cases: no note")
	}
}

func TestThroughputOneAxis(t *testing.T) {
	in := sampleInput()
	in.Bench[1].Rows = append(in.Bench[1].Rows, row("volo_d1", "torch", 1, 2, 128e6, 6.8e9))
	in.Bench[0].Rows = append(in.Bench[0].Rows, row("volo_d1", "cpu", 1, 2, 53e6, 6.8e9), row("deit_s", "cpu", 1, 2, 32e6, 4.6e9))
	in.Cases["volo_d1"] = CaseInfo{Name: "volo_d1", Kind: KindNetwork, Op: "volo"}
	in.Cases["deit_s"] = CaseInfo{Name: "deit_s", Kind: KindNetwork, Op: "vit"}
	in.Cases["vit_b16"] = CaseInfo{Name: "vit_b16", Kind: KindNetwork, Op: "vit"}
	bars := throughputBars(in, in.entries())
	var got []string
	for _, b := range bars {
		got = append(got, fmt.Sprintf("%s/%s/%d", b.caseName, b.s.backend, b.batch))
	}
	// One bar per network and backend, at the largest batch, ViT family before VOLO, vitbench
	// before PyTorch; deit_s has no PyTorch row, so one bar.
	want := "deit_s/cpu/1 vit_b16/cpu/8 vit_b16/torch/8 volo_d1/cpu/1 volo_d1/torch/1"
	if strings.Join(got, " ") != want {
		t.Errorf("bars %q, want %q", strings.Join(got, " "), want)
	}
	if r := bars[1].rate; r < 12.49 || r > 12.51 {
		t.Errorf("vit_b16 at batch 8: %v img/s, want 8 / 640 ms = 12.5", r)
	}
	p, hb, slots := throughputPlot(bars)
	if _, ok := p.X.Scale.(plot.LogScale); !ok {
		t.Errorf("x scale %T, want one logarithmic axis", p.X.Scale)
	}
	if len(hb.bars) != len(bars) {
		t.Errorf("%d bars drawn for %d network/backend pairs", len(hb.bars), len(bars))
	}
	// Two family headings and three cases; every bar on that one axis, inside its range.
	if slots != 5 || len(hb.headings) != 2 || hb.headings[0].text != "ViT / DeiT" || hb.headings[1].text != "VOLO" {
		t.Errorf("slots %d, headings %+v", slots, hb.headings)
	}
	for i, b := range hb.bars {
		if b.v < p.X.Min || b.v > p.X.Max || b.y < p.Y.Min || b.y > p.Y.Max {
			t.Errorf("bar %d (%+v) outside the axes [%v, %v] × [%v, %v]", i, b, p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
		}
	}
	if !strings.Contains(hb.bars[3].text, "(2.42× PyTorch)") {
		t.Errorf("volo_d1's bar says %q, want its speed-up 128/53 = 2.42×", hb.bars[3].text)
	}
}

// TestThroughputReducedPrecision: PyTorch's bfloat16 row is a series of its own, and a
// cuda-bf16 bar states its speed-up over that row, cuda's over PyTorch's float32 one.
func TestThroughputReducedPrecision(t *testing.T) {
	bf16 := func(r results.BenchRow) results.BenchRow { r.DType = "bfloat16"; return r }
	in := Input{
		Bench: []results.BenchFile{{Rows: []results.BenchRow{
			row("vit_b16", "cuda", 1, 1, 30e6, 1e9), bf16(row("vit_b16", "cuda-bf16", 1, 1, 10e6, 1e9)),
			row("vit_b16", "torch", 1, 1, 60e6, 1e9), bf16(row("vit_b16", "torch", 1, 1, 40e6, 1e9)),
		}}},
		Cases: map[string]CaseInfo{"vit_b16": {Kind: KindNetwork, Op: "vit"}},
	}
	bars := throughputBars(in, in.entries())
	_, hb, _ := throughputPlot(bars)
	got := map[string]string{}
	var order []string
	for i, b := range bars {
		got[b.s.label(false)] = hb.bars[i].text
		order = append(order, b.s.label(false))
	}
	// vitbench's backends first, PyTorch after them.
	if o := strings.Join(order, ", "); o != "vitbench cuda, vitbench cuda-bf16, PyTorch, PyTorch bfloat16" {
		t.Errorf("bar order %q", o)
	}
	want := map[string]string{"vitbench cuda": "33.3  (2.00× PyTorch)", "vitbench cuda-bf16": "100  (4.00× PyTorch)",
		"PyTorch": "16.7", "PyTorch bfloat16": "25"}
	if len(got) != len(want) {
		t.Errorf("bars %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}
