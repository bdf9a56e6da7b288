package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestUnfoldRowsMatchesOracle checks every window range against the plain
// loop, bit for bit, on padded, strided, dilated and rectangular geometries.
func TestUnfoldRowsMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	geoms := []UnfoldGeom{
		{C: 3, H: 224, W: 224, KH: 7, KW: 7, SH: 4, SW: 4, PH: 2, PW: 2, DH: 1, DW: 1},
		{C: 5, H: 29, W: 23, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
		{C: 3, H: 17, W: 19, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 2, DH: 2, DW: 2},
		{C: 4, H: 21, W: 16, KH: 5, KW: 3, SH: 3, SW: 2, PH: 2, PW: 1, DH: 1, DW: 1},
		{C: 2, H: 3, W: 2, KH: 5, KW: 5, SH: 1, SW: 1, PH: 4, PW: 4, DH: 1, DW: 1},
		{C: 1, H: 9, W: 9, KH: 3, KW: 3, SH: 3, SW: 3, PH: 0, PW: 0, DH: 1, DW: 1},
	}
	for _, g := range geoms {
		g.OH = (g.H+2*g.PH-g.DH*(g.KH-1)-1)/g.SH + 1
		g.OW = (g.W+2*g.PW-g.DW*(g.KW-1)-1)/g.SW + 1
		cols, L := g.C*g.KH*g.KW, g.OH*g.OW
		x, xf := guarded(rng, g.C*g.H*g.W, true)
		want := make([]float32, L*cols)
		unfoldRef(g, x, want)
		for _, r := range [][2]int{{0, L}, {1, L - 1}, {L / 2, L/2 + 1}} {
			got, gf := guarded(rng, (r[1]-r[0])*cols, false)
			for i := range got {
				got[i] = float32(math.NaN()) // every value must be written
			}
			UnfoldRows(g, x, got, r[0], r[1])
			name := fmt.Sprintf("%+v rows %v", g, r)
			checkGuards(t, name, gf)
			checkGuards(t, name+" input", xf)
			for i, v := range got {
				if math.Float32bits(v) != math.Float32bits(want[r[0]*cols+i]) {
					t.Fatalf("%s: value %d = %g, oracle %g", name, i, v, want[r[0]*cols+i])
				}
			}
		}
	}
}

func BenchmarkUnfoldRows(b *testing.B) {
	for _, g := range []UnfoldGeom{
		{C: 3, H: 224, W: 224, KH: 16, KW: 16, SH: 16, SW: 16, DH: 1, DW: 1, OH: 14, OW: 14},
		{C: 3, H: 224, W: 224, KH: 7, KW: 7, SH: 4, SW: 4, PH: 2, PW: 2, DH: 1, DW: 1, OH: 56, OW: 56},
		{C: 64, H: 56, W: 56, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, OH: 28, OW: 28},
	} {
		x := make([]float32, g.C*g.H*g.W)
		out := make([]float32, g.OH*g.OW*g.C*g.KH*g.KW)
		b.Run(fmt.Sprintf("c%d_k%d_s%d", g.C, g.KH, g.SH), func(b *testing.B) {
			for b.Loop() {
				UnfoldRows(g, x, out, 0, g.OH*g.OW)
			}
			b.ReportMetric(float64(4*len(out))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
