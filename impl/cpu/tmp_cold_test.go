package cpu

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"vitbench/bench"
	"vitbench/bench/ops"
)

var tmpVariant int
var tmpGroup, tmpCols, tmpPF, tmpBFloats int

// TestTmpCold times conv nodes with cold data: sets of buffers rotated so
// that each call's input, residual and output come from memory.
func TestTmpCold(t *testing.T) {
	spec := os.Getenv("TMPCOLD")
	if spec == "" {
		t.Skip()
	}
	nv, _ := strconv.Atoi(os.Getenv("TMPV"))
	if nv == 0 {
		nv = 2
	}
	paths := strings.Split(os.Getenv("TMPPATHS"), ",")
	for _, cs := range strings.Split(spec, ";") {
		var cin, cout, h, k, s, res int
		bt := 1
		fmt.Sscanf(cs, "%d,%d,%d,%d,%d,%d,%d", &cin, &cout, &h, &k, &s, &res, &bt)
		conv := ops.Conv2d{Unfold: ops.Unfold{Batch: bt, InChans: cin, Height: h, Width: h, KernelH: k, KernelW: k,
			StrideH: s, StrideW: s, PadH: k / 2, PadW: k / 2, DilationH: 1, DilationW: 1}, OutChans: cout,
			BN: true, BNEps: 1e-5, ReLU: true, Residual: res == 1}
		oh := conv.OutH()
		per := bench.Shape{cout}
		shapes := []bench.Shape{{bt, cin, h, h}, {cout, cin, k, k}, per, per, per, per}
		if res == 1 {
			shapes = append(shapes, bench.Shape{bt, cout, oh, oh})
		}
		setBytes := 0
		for _, s := range shapes {
			setBytes += int(s.Elems()) * 4
		}
		setBytes += bt * cout * oh * oh * 4
		sets := max(4, 160<<20/setBytes/len(paths))
		if os.Getenv("TMPWARM") != "" {
			sets = 1
		}
		type world struct {
			be      *Backend
			in, out [][]bench.Tensor
		}
		var worlds []world
		for range paths {
			be := New(0)
			var in, out [][]bench.Tensor
			for range sets {
				var ii []bench.Tensor
				for i, s := range shapes {
					if len(in) > 0 && i >= 1 && i <= 5 && os.Getenv("TMPCOLDW") == "" {
						ii = append(ii, in[0][i])
						continue
					}
					x, _ := be.Alloc(s, bench.Float32)
					d := make([]float32, s.Elems())
					for j := range d {
						d[j] = float32((j*7+i*13)%17)/17 - 0.5
					}
					if i == 3 || i == 5 {
						for j := range d {
							d[j] = 0.5 + float32(j%5)/10
						}
					}
					be.Upload(x, d)
					ii = append(ii, x)
				}
				o, _ := be.Alloc(bench.Shape{bt, cout, oh, oh}, bench.Float32)
				in, out = append(in, ii), append(out, []bench.Tensor{o})
			}
			worlds = append(worlds, world{be, in, out})
		}
		nvar := nv * len(paths)
		times := make([][]float64, nvar)
		set := 0
		for r := 0; r < 40; r++ {
			for vv := range nvar {
				v := (vv + r) % nvar
				tmpVariant = v % nv
				if nv == 2 && tmpVariant == 1 {
					tmpVariant = 3
				}
				convPath = paths[v/nv]
				t0 := time.Now()
				for range 4 {
					set = (set + 1) % sets
					wd := worlds[v/nv]
					if err := wd.be.Enqueue(conv, wd.in[set], wd.out[set]); err != nil {
						t.Fatal(err)
					}
				}
				if r >= 2 {
					times[v] = append(times[v], time.Since(t0).Seconds()/4*1e3)
				}
			}
		}
		line := cs
		flop := 2 * float64(bt*oh*oh*cout*cin*k*k)
		for v := range nvar {
			slices.Sort(times[v])
			m := times[v][len(times[v])/2]
			line += fmt.Sprintf("  %s/v%d %.3f ms (%.0f GF/s)", paths[v/nv], v%nv, m, flop/m/1e6)
		}
		t.Log(line)
	}
	convPath = ""
}

func init() {
	if v, err := strconv.Atoi(os.Getenv("TMPGROUP")); err == nil {
		tmpGroup = v
	}
	if v, err := strconv.Atoi(os.Getenv("TMPCOLS")); err == nil {
		tmpCols = v
	}
}

func init() {
	if v, err := strconv.Atoi(os.Getenv("TMPPF")); err == nil {
		tmpPF = v
	}
}

func init() {
	if v, err := strconv.Atoi(os.Getenv("TMPB")); err == nil {
		tmpBFloats = v
	}
}

func init() {
	if v, err := strconv.Atoi(os.Getenv("TMPVAR")); err == nil {
		tmpVariant = v
	}
}

func BenchmarkTmpConv(b *testing.B) {
	var cin, cout, h, k, s, res int
	bt := 1
	fmt.Sscanf(os.Getenv("TMPCONV"), "%d,%d,%d,%d,%d,%d,%d", &cin, &cout, &h, &k, &s, &res, &bt)
	conv := ops.Conv2d{Unfold: ops.Unfold{Batch: bt, InChans: cin, Height: h, Width: h, KernelH: k, KernelW: k,
		StrideH: s, StrideW: s, PadH: k / 2, PadW: k / 2, DilationH: 1, DilationW: 1}, OutChans: cout,
		BN: true, BNEps: 1e-5, ReLU: true, Residual: res == 1}
	oh := conv.OutH()
	per := bench.Shape{cout}
	shapes := []bench.Shape{{bt, cin, h, h}, {cout, cin, k, k}, per, per, per, per}
	if res == 1 {
		shapes = append(shapes, bench.Shape{bt, cout, oh, oh})
	}
	be := New(0)
	var in []bench.Tensor
	for i, s := range shapes {
		x, _ := be.Alloc(s, bench.Float32)
		d := make([]float32, s.Elems())
		for j := range d {
			d[j] = float32((j*7+i*13)%17)/17 - 0.5
			if i == 3 || i == 5 {
				d[j] = 0.5 + float32(j%5)/10
			}
		}
		be.Upload(x, d)
		in = append(in, x)
	}
	o, _ := be.Alloc(bench.Shape{bt, cout, oh, oh}, bench.Float32)
	for b.Loop() {
		if err := be.Enqueue(conv, in, []bench.Tensor{o}); err != nil {
			b.Fatal(err)
		}
	}
}

