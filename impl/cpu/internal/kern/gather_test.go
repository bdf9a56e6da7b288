package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// weightedRowsRef is the oracle: the doc comment's sum in float64.
func weightedRowsRef(n int, src []float32, offs []int32, w []float32) []float64 {
	out := make([]float64, n)
	for j, o := range offs {
		for d := 0; d < n; d++ {
			out[d] += float64(w[j]) * float64(src[int(o)+d])
		}
	}
	return out
}

// TestWeightedRowsMatchesOracle runs every path on channel counts around
// the vector widths and unrolled blocks, with 0 to 70 taps, rows at the
// very start and end of the source, repeated rows, and NaN guard regions
// around the source and the output.
func TestWeightedRowsMatchesOracle(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, n := range []int{1, 7, 8, 15, 16, 17, 30, 31, 32, 33, 47, 64, 71, 100, 128, 129, 256} {
			for _, taps := range []int{0, 1, 3, 4, 16, 64, 70} {
				rows := 9
				src, srcFull := guarded(rng, rows*n+3, true)
				out, outFull := guarded(rng, n, false)
				offs := make([]int32, taps)
				w := make([]float32, taps)
				for j := range offs {
					switch j % 5 {
					case 0:
						offs[j] = 0
					case 1:
						offs[j] = int32(len(src) - n) // the last row that fits
					default:
						offs[j] = int32(rng.IntN(len(src) - n + 1))
					}
					w[j] = rng.Float32()*2 - 1
				}
				WeightedRows(n, src, offs, w, out)
				want := weightedRowsRef(n, src, offs, w)
				for d := range out {
					// The float32 sum of taps products: within taps roundings of Σ|terms|.
					var mag float64
					for j, o := range offs {
						mag += math.Abs(float64(w[j]) * float64(src[int(o)+d]))
					}
					if diff := math.Abs(float64(out[d]) - want[d]); diff > float64(taps+1)*6e-8*mag+1e-30 {
						t.Fatalf("n=%d taps=%d: out[%d] = %g, want %g", n, taps, d, out[d], want[d])
					}
				}
				checkGuards(t, "WeightedRows src", srcFull)
				checkGuards(t, "WeightedRows out", outFull)
			}
		}
	})
}

// TestWeightedRowsRejectsRowsOutside checks that an offset whose row leaves
// the source panics before any read.
func TestWeightedRowsRejectsRowsOutside(t *testing.T) {
	src := make([]float32, 40)
	out := make([]float32, 8)
	for _, o := range []int32{-1, 33, 1 << 30} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("offset %d: no panic", o)
				}
			}()
			WeightedRows(8, src, []int32{0, o}, []float32{1, 1}, out)
		}()
	}
	WeightedRows(8, src, []int32{32}, []float32{1}, out) // the last row that fits
}

// TestCopyTaps12MatchesGo checks the panel copy on every path against its
// Go twin, with NaN guards after the panel.
func TestCopyTaps12MatchesGo(t *testing.T) {
	src := make([]float32, 500)
	for i := range src {
		src[i] = float32(i) * 0.5
	}
	for _, n := range []int{0, 1, 7, 64} {
		taps := make([]int, n)
		for p := range taps {
			taps[p] = (p * 37) % (len(src) - 12)
		}
		want := make([]float32, n*12+4)
		for i := range want {
			want[i] = float32(math.NaN())
		}
		copyTaps12Go(src, taps, want)
		for _, p := range Supported() {
			prev := SetISA(p)
			got := make([]float32, n*12+4)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			copyTaps12(src, taps, got)
			SetISA(prev)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d: element %d = %g, want %g", p, n, i, got[i], want[i])
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("copyTaps12 read past the image without panicking")
		}
	}()
	copyTaps12(src, []int{len(src) - 11}, make([]float32, 12))
}

// TestPackRowsMatchesLoop: on every path, packRows writes exactly the
// loop's values for panel widths with and without a kernel, column counts
// around the 8-column step and rows that start anywhere (out of order,
// overlapping), inside NaN guards, and it refuses a row that would read
// past the source.
func TestPackRowsMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	src := make([]float32, 5000)
	for i := range src {
		src[i] = rng.Float32()
	}
	for _, rows := range []int{12, 16, 32, 5} {
		for _, cols := range []int{1, 3, 7, 8, 9, 15, 16, 17, 64, 100} {
			offs := make([]int, rows)
			for r := range offs {
				offs[r] = rng.IntN(len(src) - cols + 1)
			}
			offs[rows/2] = len(src) - cols // a row that ends at the last value
			want := make([]float32, cols*rows)
			for p := 0; p < cols; p++ {
				for r := 0; r < rows; r++ {
					want[p*rows+r] = src[offs[r]+p]
				}
			}
			for _, isa := range Supported() {
				prev := SetISA(isa)
				got, full := guarded(rng, cols*rows, false)
				packRows(src, offs, cols, got)
				SetISA(prev)
				what := fmt.Sprintf("%s rows %d cols %d", isa, rows, cols)
				checkGuards(t, what, full)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: dst[%d] (column %d, row %d) = %g, want %g", what, i, i/rows, i%rows, got[i], want[i])
					}
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("packRows read past the source without panicking")
		}
	}()
	offs := make([]int, 12)
	offs[11] = len(src) - 7
	packRows(src, offs, 8, make([]float32, 96))
}

// TestPackRowsToPanelsMatchesLoop: on every path and for both panel widths
// with a kernel (16, 32) and one without (8), packRowsToPanels writes
// exactly the loop's panels, zero past the last column, for row counts
// around the kernel's four rows and columns around a whole panel, from a
// matrix wider than the columns, inside NaN guards.
func TestPackRowsToPanelsMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, nr := range []int{16, 32, 8} {
		for _, kb := range []int{1, 3, 4, 5, 8, 11} {
			for _, n := range []int{1, 15, 16, 17, 32, 33, 64, 100} {
				ldb := n + 7
				b := make([]float32, kb*ldb)
				for i := range b {
					b[i] = rng.Float32()
				}
				panels := (n + nr - 1) / nr
				want := make([]float32, panels*nr*kb)
				for p := 0; p < kb; p++ {
					for j := 0; j < n; j++ {
						want[j/nr*nr*kb+p*nr+j%nr] = b[p*ldb+j]
					}
				}
				for _, isa := range Supported() {
					prev := SetISA(isa)
					got, full := guarded(rng, len(want), false)
					packRowsToPanels(got, b, ldb, n, nr, kb)
					SetISA(prev)
					what := fmt.Sprintf("%s nr %d rows %d cols %d", isa, nr, kb, n)
					checkGuards(t, what, full)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: pb[%d] = %g, want %g", what, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestWeightedRowsHeads runs WeightedRowsHeads on every path against the
// bits of WeightedRows head by head (weights gathered from attn) and the
// float64 sum: rows of 8 to 64 values (one to four vectors of each path,
// and widths no kernel takes), one to six heads, 1 to 70 terms, the last
// rows and weights that fit, NaN guards around src, attn and out.
func TestWeightedRowsHeads(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, d := range []int{8, 16, 20, 24, 32, 48, 64} {
			for _, heads := range []int{1, 2, 6} {
				for _, taps := range []int{1, 9, 36, 70} {
					rows, headStride := 7, 81
					src, srcFull := guarded(rng, rows*heads*d+5, true)
					attn, attnFull := guarded(rng, 90+(heads-1)*headStride, true)
					out, outFull := guarded(rng, heads*d, false)
					offs, where := make([]int32, taps), make([]int32, taps)
					for j := range offs {
						offs[j] = int32(rng.IntN(rows) * heads * d)
						where[j] = int32(rng.IntN(90))
						if j%4 == 1 {
							offs[j] = int32(len(src) - heads*d) // the last row that fits
							where[j] = int32(len(attn) - 1 - (heads-1)*headStride)
						}
					}
					what := fmt.Sprintf("d %d heads %d taps %d", d, heads, taps)
					WeightedRowsHeads(d, heads, src, offs, where, attn, headStride, out)
					checkGuards(t, what+" src", srcFull)
					checkGuards(t, what+" attn", attnFull)
					checkGuards(t, what+" out", outFull)
					w := make([]float32, taps)
					for h := range heads {
						for j, at := range where {
							w[j] = attn[int(at)+h*headStride]
						}
						want := make([]float32, d)
						WeightedRows(d, src[h*d:], offs, w, want)
						ref := weightedRowsRef(d, src[h*d:], offs, w)
						for c := range d {
							g := out[h*d+c]
							if math.Float32bits(g) != math.Float32bits(want[c]) || math.Abs(float64(g)-ref[c]) > 1e-5*(1+math.Abs(ref[c])) {
								t.Fatalf("%s: out[%d] = %v, WeightedRows %v, float64 %v", what, h*d+c, g, want[c], ref[c])
							}
						}
					}
				}
			}
		}
	})
}
