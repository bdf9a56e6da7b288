package cpu

import (
	"fmt"
	"os"
	"testing"
	"time"

	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// TestWinogradPhases prints the one-thread time of the Winograd path's
// three phases (input transform, the 16 products, output transform) for
// a few ResNet and VQGAN shapes, the best of 20 runs: where its time goes.
// Skipped unless VITBENCH_PROFILE_AB is set.
func TestWinogradPhases(t *testing.T) {
	if os.Getenv("VITBENCH_PROFILE_AB") == "" {
		t.Skip("VITBENCH_PROFILE_AB not set")
	}
	for _, cv := range [][3]int{{64, 64, 56}, {32, 32, 64}, {64, 64, 16}, {512, 512, 7}, {256, 256, 14}} {
		cin, cout, h := cv[0], cv[1], cv[2]
		c := ops.Conv2d{Unfold: ops.Unfold{Batch: 1, InChans: cin, Height: h, Width: h, KernelH: 3, KernelW: 3,
			StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1}, OutChans: cout}
		g := newWinoGeom(c, 1)
		wf := make([]float32, cout*cin*9)
		for i := range wf {
			wf[i] = float32(i%7) * 0.1
		}
		w := winogradWeight(g, wf, make([]float32, cout))
		ps := g.ps
		x := make([]float32, cin*h*h)
		q, v := make([]float32, 4*cin*ps), make([]float32, 16*cin*g.vs)
		row := make([]float32, 2*g.wq+32)
		wide := 2 * g.blocks * winogradCols
		wout := make([]float32, 2*cout*wide)
		kr := w.parts[0][0].Rows()
		m := make([]float32, 16*kr*winogradCols)
		var tIn, tG, tOut time.Duration
		for r := 0; r < 20; r++ {
			t0 := time.Now()
			for ch := 0; ch < cin; ch++ {
				g.transformInput(x, q, v, ch, 0, row)
			}
			t1 := time.Now()
			var tg, to time.Duration
			for blk := 0; blk < g.blocks; blk++ {
				for part := 0; part < g.parts; part++ {
					w0 := blk * winogradCols
					nb := min(winogradCols, g.n-w0)
					a := time.Now()
					for i := range 16 {
						kern.SgemmTaps(w.parts[part][i], v[i*cin*g.vs+w0:], g.taps, nb, m[i*kr*winogradCols:], winogradCols)
					}
					b := time.Now()
					o0 := part * g.partRows
					for r := 0; r < w.parts[part][0].M; r++ {
						plane := wout[(o0+r)*2*wide:]
						kern.WinogradOutput(nb, m[r*winogradCols:], kr*winogradCols, 0, plane[2*w0:wide], plane[wide+2*w0:2*wide])
					}
					tg += b.Sub(a)
					to += time.Since(b)
				}
			}
			if r == 0 || t1.Sub(t0) < tIn {
				tIn = t1.Sub(t0)
			}
			if r == 0 || tg < tG {
				tG = tg
			}
			if r == 0 || to < tOut {
				tOut = to
			}
		}
		fl := 16 * float64(cin*cout*g.n) * 2
		fmt.Printf("%v: input %v, products %v (%.0f GFLOP/s over the wide tiles), output %v; direct convolution %.0f MFLOP\n", cv, tIn, tG, fl/tG.Seconds()/1e9, tOut, float64(2*cin*cout*9*h*h)/1e6)
	}
}
