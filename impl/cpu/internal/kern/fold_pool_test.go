package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestFoldChannelMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, g := range []UnfoldGeom{
		{C: 6, H: 28, W: 28, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
		{C: 3, H: 17, W: 19, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 2, DH: 2, DW: 2},
		{C: 4, H: 21, W: 16, KH: 5, KW: 3, SH: 3, SW: 2, PH: 2, PW: 1, DH: 1, DW: 1},
		{C: 2, H: 7, W: 9, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	} {
		g.OH = (g.H+2*g.PH-g.DH*(g.KH-1)-1)/g.SH + 1
		g.OW = (g.W+2*g.PW-g.DW*(g.KW-1)-1)/g.SW + 1
		x, xf := guarded(rng, g.OH*g.OW*g.C*g.KH*g.KW, true)
		want := make([]float32, g.C*g.H*g.W)
		foldRef(g, x, want)
		for c := 0; c < g.C; c++ {
			plane, pf := guarded(rng, g.H*g.W, true) // must be overwritten
			FoldChannel(g, x, c, plane)
			checkGuards(t, "plane", pf)
			for i, v := range plane {
				if math.Float32bits(v) != math.Float32bits(want[c*g.H*g.W+i]) {
					t.Fatalf("%+v c%d [%d]: %g, oracle %g", g, c, i, v, want[c*g.H*g.W+i])
				}
			}
		}
		checkGuards(t, "x", xf)
	}
}

// TestAvgPoolPlane checks the ceil-mode and divisor rules on hand-worked
// examples: a 3×3 plane of ones pooled 2×2 stride 2 in ceil mode has edge
// windows that hang past the image.
func TestAvgPoolPlane(t *testing.T) {
	ones := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, c := range []struct {
		g    PoolGeom
		want []float32
	}{
		// Windows [0,2)×[0,2), [0,2)×[2,3) (size 2·1 since x1 = min(4, 3)), …
		{PoolGeom{H: 3, W: 3, KH: 2, KW: 2, SH: 2, SW: 2, OH: 2, OW: 2, CountIncludePad: true},
			[]float32{(1 + 2 + 4 + 5) / 4., (3 + 6) / 2., (7 + 8) / 2., 9}},
		// Padding 1, kernel 3, stride 2: the corner window covers 2×2 pixels
		// of a 3×3 padded window: 9 with count_include_pad, 4 without.
		{PoolGeom{H: 3, W: 3, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, OH: 2, OW: 2, CountIncludePad: true},
			[]float32{(1 + 2 + 4 + 5) / 9., (2 + 3 + 5 + 6) / 9., (4 + 5 + 7 + 8) / 9., (5 + 6 + 8 + 9) / 9.}},
		{PoolGeom{H: 3, W: 3, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, OH: 2, OW: 2},
			[]float32{(1 + 2 + 4 + 5) / 4., (2 + 3 + 5 + 6) / 4., (4 + 5 + 7 + 8) / 4., (5 + 6 + 8 + 9) / 4.}},
	} {
		out := make([]float32, c.g.OH*c.g.OW)
		AvgPoolPlane(c.g, ones, out)
		if fmt.Sprint(out) != fmt.Sprint(c.want) {
			t.Errorf("%+v: got %v, want %v", c.g, out, c.want)
		}
	}
}

// TestWindowsAMatchesUnfold: packing the windows straight from the images
// equals packing their unfolded matrix, for padded, strided, dilated
// geometries, a batch of two, and every row offset and panel height.
func TestWindowsAMatchesUnfold(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, g := range []UnfoldGeom{
		{C: 3, H: 224, W: 224, KH: 16, KW: 16, SH: 16, SW: 16, DH: 1, DW: 1},
		{C: 5, H: 13, W: 11, KH: 3, KW: 2, SH: 2, SW: 1, PH: 1, PW: 0, DH: 2, DW: 1},
		{C: 4, H: 12, W: 12, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	} {
		g.OH = (g.H+2*g.PH-g.DH*(g.KH-1)-1)/g.SH + 1
		g.OW = (g.W+2*g.PW-g.DW*(g.KW-1)-1)/g.SW + 1
		per, k := g.OH*g.OW, g.C*g.KH*g.KW
		x, _ := guarded(rng, 2*g.C*g.H*g.W, true)
		cols := make([]float32, 2*per*k)
		UnfoldRows(g, x[:g.C*g.H*g.W], cols, 0, per)
		UnfoldRows(g, x[g.C*g.H*g.W:], cols[per*k:], 0, per)
		w := NewWindowsA(g, x)
		for _, mr := range []int{12, 6, 4} {
			for _, start := range []int{0, 5, per - 3} {
				m := min(2*per-start, 40)
				kb := min(k, 100)
				want := make([]float32, (m+mr)*kb)
				got := make([]float32, (m+mr)*kb)
				packA(want, cols[start*k:], k, 0, m, mr, 7%k, min(kb, k-7%k))
				w.From(start).PackA(got, 0, m, mr, 7%k, min(kb, k-7%k))
				for i := range want {
					if want[i] != got[i] {
						t.Fatalf("%+v mr %d start %d: packed[%d] = %g, unfold gives %g", g, mr, start, i, got[i], want[i])
					}
				}
			}
		}
	}
}
