package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// tapPairsGeoms are convolutions with an even channel count: strided,
// dilated, rectangular and padded windows, a 1×1 convolution, and k past
// one block of the bf16 GEMM whose block edge falls inside a tap.
var tapPairsGeoms = []UnfoldGeom{
	{C: 6, H: 13, W: 11, KH: 3, KW: 2, SH: 2, SW: 1, PH: 1, PW: 2, DH: 2, DW: 1},   // k = 36
	{C: 64, H: 10, W: 9, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1},                 // k = 64
	{C: 250, H: 7, W: 6, KH: 3, KW: 3, SH: 1, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},   // k = 2250: two blocks
	{C: 2, H: 9, W: 12, KH: 5, KW: 5, SH: 1, SW: 1, PH: 4, PW: 4, DH: 2, DW: 2},    // k = 50, wide padding
	{C: 32, H: 16, W: 17, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},  // k = 288
	{C: 128, H: 5, W: 5, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},   // k = 1152
	{C: 10, H: 6, W: 31, KH: 1, KW: 3, SH: 1, SW: 1, PH: 0, PW: 1, DH: 1, DW: 3},   // k = 30, a row kernel
	{C: 18, H: 4, W: 4, KH: 4, KW: 4, SH: 4, SW: 4, PH: 0, PW: 0, DH: 1, DW: 1},    // k = 288, patches
	{C: 4, H: 3, W: 3, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},     // k = 36, all edge
	{C: 12, H: 20, W: 3, KH: 3, KW: 3, SH: 3, SW: 1, PH: 2, PW: 1, DH: 1, DW: 1},   // k = 108
	{C: 200, H: 4, W: 4, KH: 2, KW: 2, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},   // k = 800
	{C: 240, H: 3, W: 3, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},   // k = 2160: two blocks
	{C: 2, H: 1, W: 1, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},     // one pixel
	{C: 8, H: 2, W: 7, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},     // k = 72
	{C: 16, H: 15, W: 15, KH: 3, KW: 3, SH: 2, SW: 2, PH: 0, PW: 0, DH: 1, DW: 1},  // k = 144, no padding
	{C: 96, H: 8, W: 8, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 2, DH: 2, DW: 2},    // k = 864, dilated
	{C: 44, H: 11, W: 5, KH: 7, KW: 1, SH: 1, SW: 1, PH: 3, PW: 0, DH: 1, DW: 1},   // k = 308, a column kernel
	{C: 6, H: 50, W: 50, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},   // k = 54, many rows
	{C: 1024, H: 2, W: 2, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},  // k = 1024
	{C: 2048, H: 2, W: 3, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},  // k = 2048: one whole block
	{C: 2050, H: 1, W: 2, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},  // k = 2050: a block and a pair
	{C: 14, H: 9, W: 9, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},    // k = 126
	{C: 22, H: 6, W: 10, KH: 2, KW: 3, SH: 2, SW: 3, PH: 1, PW: 2, DH: 2, DW: 1},   // k = 132
	{C: 128, H: 28, W: 28, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1}, // ResNet's 3×3 at 28×28
	{C: 256, H: 14, W: 14, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1}, // ResNet's 1×1 at 14×14
	{C: 64, H: 56, W: 56, KH: 1, KW: 1, SH: 2, SW: 2, PH: 0, PW: 0, DH: 1, DW: 1},  // a strided 1×1
	{C: 2, H: 5, W: 4, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1},     // padding past the kernel's reach
	{C: 36, H: 12, W: 12, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},  // k = 324
	{C: 20, H: 3, W: 17, KH: 3, KW: 5, SH: 1, SW: 2, PH: 1, PW: 2, DH: 1, DW: 1},   // k = 300
	{C: 50, H: 5, W: 7, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},    // k = 450
	{C: 4, H: 33, W: 1, KH: 3, KW: 1, SH: 1, SW: 1, PH: 1, PW: 0, DH: 1, DW: 1},    // one column
	{C: 6, H: 1, W: 33, KH: 1, KW: 3, SH: 1, SW: 1, PH: 0, PW: 1, DH: 1, DW: 1},    // one row
	{C: 30, H: 9, W: 8, KH: 2, KW: 2, SH: 2, SW: 2, PH: 0, PW: 0, DH: 1, DW: 1},    // k = 120
	{C: 256, H: 4, W: 4, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},   // k = 2304: two blocks
	{C: 60, H: 3, W: 4, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},    // k = 540
	{C: 2, H: 2, W: 2, KH: 2, KW: 2, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},     // k = 8
	{C: 8, H: 24, W: 24, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},   // k = 72, many rows
	{C: 26, H: 7, W: 9, KH: 3, KW: 3, SH: 2, SW: 1, PH: 0, PW: 1, DH: 1, DW: 2},    // k = 234
	{C: 48, H: 6, W: 6, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1},    // k = 1200
	{C: 100, H: 3, W: 3, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},   // k = 900
	{C: 3, H: 30, W: 27, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},   // an RGB stem: k = 196 with the zero channel
	{C: 5, H: 9, W: 8, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 2, DW: 2},     // odd and dilated
	{C: 1, H: 12, W: 10, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},   // one channel
}

// withOut fills in g's output size.
func withOut(g UnfoldGeom) UnfoldGeom {
	g.OH = (g.H+2*g.PH-g.DH*(g.KH-1)-1)/g.SH + 1
	g.OW = (g.W+2*g.PW-g.DW*(g.KW-1)-1)/g.SW + 1
	return g
}

// tapMajorCols is the oracle of TapPairsA: the windows of images x
// [batch, C, H, W] unfolded (UnfoldRows), each row's columns reordered
// tap-major ((ky·KW + kx)·Cp + c, a zero column c = C when C is odd) and
// rounded to bf16 (as float32).
func tapMajorCols(g UnfoldGeom, batch int, x []float32) []float32 {
	m, k, taps, cp := g.OH*g.OW, g.C*g.KH*g.KW, g.KH*g.KW, TapPairsChans(g.C)
	cols := make([]float32, m*k)
	kp := TapPairsK(g)
	out := make([]float32, batch*m*kp)
	for b := range batch {
		UnfoldRows(g, x[b*g.C*g.H*g.W:], cols, 0, m)
		for l := range m {
			for c := range g.C {
				for t := range taps {
					out[(b*m+l)*kp+t*cp+c] = BF16ToFloat32(RoundBF16(cols[l*k+c*taps+t]))
				}
			}
		}
	}
	return out
}

// TestTapPairsA checks the pair images and both ways of reading them
// against the unfolded oracle (tapMajorCols): FillRows over two workers'
// shares in reverse order into a buffer holding garbage, PackPairs over
// blocks of k that start and end inside a tap, from a row offset (From),
// and PackA's float32 panels with a last panel not full. On every ISA path
// (FillRows transposes and rounds with SIMD).
func TestTapPairsA(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		for gi, g := range tapPairsGeoms {
			if gi >= 12 && g.C%2 == 0 {
				continue
			}
			g = withOut(g)
			const batch = 2
			x := make([]float32, batch*g.C*g.H*g.W)
			for i := range x {
				x[i] = rng.Float32()*2 - 1
			}
			want := tapMajorCols(g, batch, x)
			m, k := batch*g.OH*g.OW, TapPairsK(g)
			img := make([]uint32, TapPairsLen(g, batch)+8)
			for i := range img {
				img[i] = 0x7fc07fc0 // NaN pairs: every one must be written
			}
			src := NewTapPairsA(g, batch, img)
			buf := make([]float32, g.W*TapPairsChans(g.C))
			for i := range buf {
				buf[i] = float32(math.NaN()) // scratch holds anything
			}
			half := src.PaddedRows() / 2
			src.FillRows(x, half, src.PaddedRows(), buf)
			src.FillRows(x, 0, half, buf)
			for i := TapPairsLen(g, batch); i < len(img); i++ {
				if img[i] != 0x7fc07fc0 {
					t.Fatalf("%+v: FillRows wrote past the images at %d", g, i)
				}
			}
			what := fmt.Sprintf("%+v", g)
			for _, blk := range [][2]int{{0, k}, {2, min(k-2, 10)}, {k - 4, 4}, {k / 2 / 2 * 2, k - k/2/2*2}} {
				pc, kb := blk[0], blk[1]
				for _, row0 := range []int{0, 3} {
					if row0 >= m {
						continue
					}
					mb, lda := m-row0, kb/2+5
					dst := make([]uint32, mb*lda)
					src.From(row0).PackPairs(dst, lda, 0, mb, pc, kb)
					for r := range mb {
						for p := range kb / 2 {
							lo, hi := BF16ToFloat32(uint16(dst[r*lda+p])), BF16ToFloat32(uint16(dst[r*lda+p]>>16))
							wl, wh := want[(row0+r)*k+pc+2*p], want[(row0+r)*k+pc+2*p+1]
							if !sameFloat(lo, wl) || !sameFloat(hi, wh) {
								t.Fatalf("%s: PackPairs(pc %d, kb %d) row %d pair %d = (%g, %g), want (%g, %g)", what, pc, kb, row0+r, p, lo, hi, wl, wh)
							}
						}
						for p := kb / 2; p < lda; p++ {
							if dst[r*lda+p] != 0 {
								t.Fatalf("%s: PackPairs wrote past its pairs in row %d", what, r)
							}
						}
					}
				}
			}
			const mr = 4
			i0, mb := 1, min(m-1, 7)
			pa := make([]float32, (mb+mr-1)/mr*mr*k)
			for i := range pa {
				pa[i] = float32(math.NaN())
			}
			src.PackA(pa, i0, mb, mr, 0, k)
			for ir := 0; ir < mb; ir += mr {
				for r := range mr {
					for p := range k {
						w := float32(0)
						if ir+r < mb {
							w = want[(i0+ir+r)*k+p]
						}
						if got := pa[ir*k+p*mr+r]; !sameFloat(got, w) {
							t.Fatalf("%s: PackA row %d col %d = %g, want %g", what, i0+ir+r, p, got, w)
						}
					}
				}
			}
		}
	})
}

// TestSgemmSourceTapPairs runs the bf16 GEMM on TapPairsA (its pairs
// copied in by PackPairs) against the oracle on the tap-major unfolded
// matrix with the weight reordered by TapMajor: bit for bit on the
// VDPBF16PS kernels and the Go twin, within amxBound on AMX. Some
// geometries have k past one block of the GEMM.
func TestSgemmSourceTapPairs(t *testing.T) {
	forEachBF16Kernel(t, func(t *testing.T, exact bool) {
		rng := rand.New(rand.NewPCG(23, 24))
		for gi, g := range tapPairsGeoms {
			if gi%3 != 0 && g.C*g.KH*g.KW < 2048 && g.C%2 == 0 {
				continue // a third of the small ones keeps the test short
			}
			g = withOut(g)
			batch := 1 + gi%2
			x := make([]float32, batch*g.C*g.H*g.W)
			for i := range x {
				x[i] = rng.Float32()*2 - 1
			}
			k, m, n := TapPairsK(g), batch*g.OH*g.OW, 37
			w := make([]float32, n*g.C*g.KH*g.KW) // [O, C, KH, KW]
			for i := range w {
				w[i] = rng.Float32()*2 - 1
			}
			wt := TapMajor(n, g.C, g.KH, g.KW, w)
			cols := tapMajorCols(g, batch, x)
			src := NewTapPairsA(g, batch, make([]uint32, TapPairsLen(g, batch)))
			src.FillRows(x, 0, src.PaddedRows(), make([]float32, g.W*TapPairsChans(g.C)))
			c, cf := guarded(rng, m*n, false)
			SgemmSource(m, src, PackBTBF16(n, k, wt, k), c, n, Epilogue{})
			checkGuards(t, fmt.Sprintf("%+v C", g), cf)
			checkUnfoldedBF16(t, fmt.Sprintf("%+v", g), c, cols, wt, m, n, k, exact)
		}
	})
}

// TestTapMajor: the weight's columns reordered from c·KH·KW + t to
// t·Cp + c, with a zero column per tap for an odd channel count.
func TestTapMajor(t *testing.T) {
	for _, c := range []int{5, 6} {
		const o, kh, kw = 3, 2, 3
		cp := TapPairsChans(c)
		w := make([]float32, o*c*kh*kw)
		for i := range w {
			w[i] = float32(i + 1)
		}
		got := TapMajor(o, c, kh, kw, w)
		if len(got) != o*kh*kw*cp {
			t.Fatalf("C %d: %d values, want %d", c, len(got), o*kh*kw*cp)
		}
		for i := range o {
			for ch := range cp {
				for ky := range kh {
					for kx := range kw {
						want := float32(0)
						if ch < c {
							want = w[((i*c+ch)*kh+ky)*kw+kx]
						}
						if v := got[((i*kh+ky)*kw+kx)*cp+ch]; v != want {
							t.Fatalf("C %d: out[%d][%d][%d][%d] = %g, want %g", c, i, ky, kx, ch, v, want)
						}
					}
				}
			}
		}
	}
}

// TestSgemmSourceCols: the product's columns computed in pieces (each
// piece packing all of A, as workers that split the columns do) are the
// columns of the whole product, bit for bit, with bias and ReLU, for fp32
// and bf16 B, windows from NCHW images and from tap pairs, on every ISA
// path.
func TestSgemmSourceCols(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(25, 26))
		g := withOut(UnfoldGeom{C: 8, H: 7, W: 7, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1})
		k, m, n := g.C*g.KH*g.KW, g.OH*g.OW, 200
		x := make([]float32, g.C*g.H*g.W)
		for i := range x {
			x[i] = rng.Float32()*2 - 1
		}
		w, bias := make([]float32, n*k), make([]float32, n)
		for i := range w {
			w[i] = rng.Float32()*2 - 1
		}
		for i := range bias {
			bias[i] = rng.Float32()
		}
		pairs := NewTapPairsA(g, 1, make([]uint32, TapPairsLen(g, 1)))
		pairs.FillRows(x, 0, pairs.PaddedRows(), make([]float32, g.W*g.C))
		for _, tc := range []struct {
			name string
			src  ASource
			pb   *PackedB
		}{
			{"fp32", NewWindowsA(g, x), PackBT(n, k, w, k)},
			{"bf16", NewWindowsA(g, x), PackBTBF16(n, k, w, k)},
			{"bf16 tap pairs", pairs, PackBTBF16(n, k, TapMajor(n, g.C, g.KH, g.KW, w), k)},
		} {
			epi := Epilogue{Bias: bias, Act: ActReLU}
			whole := make([]float32, m*n)
			SgemmSource(m, tc.src, tc.pb, whole, n, epi)
			pieces := make([]float32, m*n)
			// Pieces of 64 columns, windowsGEMM's grain (the Go path's
			// kernel blocks columns by four, so narrower pieces would sum
			// its tail columns in another order).
			for j0 := 0; j0 < n; j0 += 64 {
				SgemmSourceCols(m, tc.src, tc.pb, pieces, n, epi, j0, min(j0+64, n))
			}
			for i := range whole {
				if !sameFloat(whole[i], pieces[i]) {
					t.Fatalf("%s: C[%d,%d] = %g in pieces, %g whole", tc.name, i/n, i%n, pieces[i], whole[i])
				}
			}
		}
	})
}
