package kern

import (
	"slices"
	"testing"
)

// TestWindowTapsCache checks that the cached tap tables of each geometry
// are its own: geometries that differ from a first one in a single field
// the tables depend on, asked for after it, get the tables of the
// formula, not the first one's.
func TestWindowTapsCache(t *testing.T) {
	base := UnfoldGeom{C: 3, H: 9, W: 11, KH: 3, KW: 2, SH: 1, SW: 1, DH: 1, DW: 1, OH: 7, OW: 10}
	geoms := []UnfoldGeom{base}
	for i := range 7 {
		g := base
		switch i {
		case 0:
			g.C = 2
		case 1:
			g.H = 10
		case 2:
			g.W = 12
		case 3:
			g.KH = 2
		case 4:
			g.KW = 3
		case 5:
			g.DH = 2
		case 6:
			g.DW = 2
		}
		geoms = append(geoms, g)
	}
	for round := range 2 { // built, then from the cache
		for _, g := range geoms {
			got := windowTapsOf(g)
			var taps, ys, xs []int
			for c := range g.C {
				for ky := range g.KH {
					for kx := range g.KW {
						taps = append(taps, c*g.H*g.W+ky*g.DH*g.W+kx*g.DW)
						ys, xs = append(ys, ky*g.DH), append(xs, kx*g.DW)
					}
				}
			}
			if !slices.Equal(got.taps, taps) || !slices.Equal(got.tapY, ys) || !slices.Equal(got.tapX, xs) {
				t.Fatalf("round %d, %+v: taps %v %v %v, want %v %v %v", round, g, got.taps, got.tapY, got.tapX, taps, ys, xs)
			}
		}
	}
}
