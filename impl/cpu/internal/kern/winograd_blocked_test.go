package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The tests of WinogradInputBlocked and WinogradOutputBlocked. Every
// buffer has wbPad floats before the slice a call gets and more after,
// and gaps between its rows or planes (strides wider than needed): the
// values a call may not read are NaN, so a read out of place shows in the
// output, and the outputs it may not write hold wbSentinel, a signalling
// NaN no kernel writes (their NaNs are quiet), compared by its bits.

// wbSizes are the tile counts of the tests: around the AVX-512 input
// kernel's two tiles per iteration, and a row of 56 pixels.
var wbSizes = []int{1, 2, 3, 7, 28}

const wbPad = 3*BlockLanes + 5

var wbSentinel = math.Float32frombits(0x7fb1c2d3)

// wbValue is a random value of magnitude 2^−4 to 2^12, so that another
// order of the sums would round differently.
func wbValue(rng *rand.Rand) float32 {
	return (rng.Float32()*2 - 1) * float32(math.Ldexp(1, rng.IntN(16)-4))
}

// wbBuffer returns a buffer of wbPad + size + wbPad floats filled with
// fill, and its slice from wbPad on (size floats and the pad after).
func wbBuffer(size int, fill float32) (s, full []float32) {
	full = make([]float32, size+2*wbPad)
	for i := range full {
		full[i] = fill
	}
	return full[wbPad:], full
}

// wbSame is whether a and b have the same bits, or with nanOK are both NaN.
func wbSame(a, b float32, nanOK bool) bool {
	if nanOK && a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// wbInputCase is one call of WinogradInputBlocked: x's 4 rows of 2n+2
// pixels, rowStride and vStride wider than needed.
type wbInputCase struct {
	n, rowStride, vStride int
	x, xFull              []float32
}

func newWBInputCase(rng *rand.Rand, n int) *wbInputCase {
	c := &wbInputCase{n: n}
	c.rowStride = (2*n+2)*BlockLanes + 16*rng.IntN(3) + 1 + rng.IntN(7)
	c.vStride = n*BlockLanes + 16*rng.IntN(3) + 1 + rng.IntN(7)
	c.x, c.xFull = wbBuffer(3*c.rowStride+(2*n+2)*BlockLanes, float32(math.NaN()))
	for a := 0; a < 4; a++ {
		for i := 0; i < (2*n+2)*BlockLanes; i++ {
			c.x[a*c.rowStride+i] = wbValue(rng)
		}
	}
	return c
}

// vSize is the floats of v the call may reach.
func (c *wbInputCase) vSize() int { return 15*c.vStride + c.n*BlockLanes }

// inV is whether v[i] is an output.
func (c *wbInputCase) inV(i int) bool {
	return i >= 0 && i < 16*c.vStride && i%c.vStride < c.n*BlockLanes
}

// run calls WinogradInputBlocked and the twin and returns their v inside
// sentinels (the slices start at v[0]).
func (c *wbInputCase) run() (got, twin, gotFull, twinFull []float32) {
	got, gotFull = wbBuffer(c.vSize(), wbSentinel)
	twin, twinFull = wbBuffer(c.vSize(), wbSentinel)
	WinogradInputBlocked(c.n, c.x, c.rowStride, got, c.vStride)
	winogradInputBlockedGo(c.n, c.x, c.rowStride, twin, c.vStride)
	return got, twin, gotFull, twinFull
}

// checkSentinels fails if an element of full (a buffer from wbBuffer)
// outside the outputs (in(i), i counted from the slice) lost its sentinel,
// or an output kept it.
func checkSentinels(t *testing.T, what string, full []float32, in func(i int) bool) {
	t.Helper()
	for i, v := range full {
		if isSentinel := math.Float32bits(v) == math.Float32bits(wbSentinel); isSentinel == in(i-wbPad) {
			t.Fatalf("%s: float %d (output: %v) = %v", what, i-wbPad, in(i-wbPad), v)
		}
	}
}

// TestWinogradInputBlocked checks WinogradInputBlocked on every path bit
// for bit against its Go twin and against WinogradInput (on the same
// path), each of the 16 channels put through it as the four phase planes
// of the tiles' pixels; nothing outside v's 16 planes of 16n floats may
// be written.
func TestWinogradInputBlocked(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(71, 72))
		for _, n := range wbSizes {
			c := newWBInputCase(rng, n)
			what := fmt.Sprintf("n %d rowStride %d vStride %d", n, c.rowStride, c.vStride)
			got, twin, gotFull, twinFull := c.run()
			for i := range gotFull {
				if !wbSame(gotFull[i], twinFull[i], false) {
					t.Fatalf("%s: v[%d] = %v, twin %v", what, i-wbPad, gotFull[i], twinFull[i])
				}
			}
			checkSentinels(t, what, gotFull, c.inV)
			checkSentinels(t, what+" (twin)", twinFull, c.inV)

			// WinogradInput per channel: phase plane (ra, cb) holds, in
			// its row r and column t, pixel (2r+ra, 2t+cb).
			nr, _ := winogradCount(n)
			wq := nr + 1
			phase := 2*wq + 3
			q := make([]float32, 4*phase)
			ref := make([]float32, 16*nr)
			for l := 0; l < BlockLanes; l++ {
				clear(q)
				for ra := 0; ra < 2; ra++ {
					for cb := 0; cb < 2; cb++ {
						for r := 0; r < 2; r++ {
							for tc := 0; tc <= n; tc++ {
								q[(2*ra+cb)*phase+r*wq+tc] = c.x[(2*r+ra)*c.rowStride+(2*tc+cb)*BlockLanes+l]
							}
						}
					}
				}
				WinogradInput(n, q, phase, wq, ref, nr)
				for p := 0; p < 16; p++ {
					for k := 0; k < n; k++ {
						g, w := got[p*c.vStride+k*BlockLanes+l], ref[p*nr+k]
						if !wbSame(g, w, false) || !wbSame(twin[p*c.vStride+k*BlockLanes+l], w, false) {
							t.Fatalf("%s: plane %d tile %d lane %d = %v, twin %v, WinogradInput %v",
								what, p, k, l, g, twin[p*c.vStride+k*BlockLanes+l], w)
						}
					}
				}
			}
		}
	})
}

// wbInputSets[ξ] are the rows a of d that reach X[·] combined into V[ξ]
// (and the columns b of d that reach X[a][ν] for ν = ξ).
var wbInputSets = [4][]int{{0, 2}, {1, 2}, {1, 2}, {1, 3}}

func wbHas(s []int, v int) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}

// TestWinogradInputBlockedNaN puts a NaN into one pixel's lane at a time
// (first and last columns, and columns shared by two tiles) and checks on
// every path that exactly the outputs of Bᵀ d B that depend on it are NaN.
func TestWinogradInputBlockedNaN(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(73, 74))
		for _, n := range wbSizes {
			c := newWBInputCase(rng, n)
			for _, pos := range [][3]int{{0, 0, 0}, {1, 2, 5}, {2, 3, 15}, {3, 2 * n, 9}, {1, 2*n + 1, 1}, {2, n, 7}} {
				a, col, l := pos[0], pos[1], pos[2]
				xi := a*c.rowStride + col*BlockLanes + l
				old := c.x[xi]
				c.x[xi] = float32(math.NaN())
				got, twin, _, _ := c.run()
				c.x[xi] = old
				for p := 0; p < 16; p++ {
					xiP, nu := p/4, p%4
					for k := 0; k < n; k++ {
						for ll := 0; ll < BlockLanes; ll++ {
							b := col - 2*k
							want := ll == l && b >= 0 && b < 4 && wbHas(wbInputSets[xiP], a) && wbHas(wbInputSets[nu], b)
							g := got[p*c.vStride+k*BlockLanes+ll]
							if g != g != want || !wbSame(g, twin[p*c.vStride+k*BlockLanes+ll], true) {
								t.Fatalf("n %d: NaN at row %d pixel %d lane %d: plane %d tile %d lane %d = %v (twin %v), NaN expected %v",
									n, a, col, l, p, k, ll, g, twin[p*c.vStride+k*BlockLanes+ll], want)
							}
						}
					}
				}
			}
		}
	})
}

// wbOutputCase is one call of WinogradOutputBlocked: m's 16 planes of n
// tiles, res and the old y in y's layout, strides wider than needed.
type wbOutputCase struct {
	n, mStride, rowStride int
	m, mFull, res, yOld   []float32
	bias                  [16]float32
}

func newWBOutputCase(rng *rand.Rand, n int) *wbOutputCase {
	c := &wbOutputCase{n: n}
	c.mStride = n*BlockLanes + 16*rng.IntN(3) + 1 + rng.IntN(7)
	c.rowStride = 2*n*BlockLanes + 16*rng.IntN(3) + 1 + rng.IntN(7)
	c.m, c.mFull = wbBuffer(15*c.mStride+n*BlockLanes, float32(math.NaN()))
	for p := 0; p < 16; p++ {
		for i := 0; i < n*BlockLanes; i++ {
			c.m[p*c.mStride+i] = wbValue(rng)
		}
	}
	for l := range c.bias {
		c.bias[l] = wbValue(rng)
	}
	c.res, _ = wbBuffer(c.ySize(), float32(math.NaN()))
	c.yOld, _ = wbBuffer(c.ySize(), wbSentinel)
	for i := range c.ySize() {
		if c.inY(i) {
			c.res[i] = wbValue(rng)
			c.yOld[i] = wbValue(rng)
		}
	}
	return c
}

func (c *wbOutputCase) ySize() int { return c.rowStride + 2*c.n*BlockLanes }

// inY is whether y[i] is an output.
func (c *wbOutputCase) inY(i int) bool {
	return i >= 0 && i < 2*c.rowStride && i%c.rowStride < 2*c.n*BlockLanes
}

// The residuals of a run.
const (
	wbNoRes = iota
	wbRes
	wbAlias // res = y, y holding yOld's values
)

// run calls WinogradOutputBlocked and the twin on a sentinel y (holding
// yOld's outputs when res aliases y) and returns their y (the slices start
// at y[0]) and the residual the call added.
func (c *wbOutputCase) run(resMode int, relu bool) (got, twin, gotFull, twinFull, res []float32) {
	got, gotFull = wbBuffer(c.ySize(), wbSentinel)
	twin, twinFull = wbBuffer(c.ySize(), wbSentinel)
	res, wres := c.res, c.res
	switch resMode {
	case wbNoRes:
		res, wres = nil, nil
	case wbAlias:
		copy(got, c.yOld)
		copy(twin, c.yOld)
		res, wres = got, twin
	}
	WinogradOutputBlocked(c.n, c.m, c.mStride, &c.bias, res, got, c.rowStride, relu)
	winogradOutputBlockedGo(c.n, c.m, c.mStride, &c.bias, wres, twin, c.rowStride, relu)
	if resMode == wbAlias {
		res = c.yOld
	}
	return got, twin, gotFull, twinFull, res
}

// TestWinogradOutputBlocked checks WinogradOutputBlocked on every path,
// without a residual, with one and with res = y, with and without the
// clamp, bit for bit against its Go twin and against WinogradOutput (on
// the same path) per channel followed by the residual and the clamp;
// nothing but the 2×2 pixels of each tile may be written.
func TestWinogradOutputBlocked(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(75, 76))
		for _, n := range wbSizes {
			c := newWBOutputCase(rng, n)
			nr, _ := winogradCount(n)
			ml := make([]float32, 16*nr)
			w := [2][]float32{make([]float32, 2*nr), make([]float32, 2*nr)}
			for resMode := wbNoRes; resMode <= wbAlias; resMode++ {
				for _, relu := range []bool{false, true} {
					what := fmt.Sprintf("n %d mStride %d rowStride %d res %d relu %v", n, c.mStride, c.rowStride, resMode, relu)
					got, twin, gotFull, twinFull, res := c.run(resMode, relu)
					for i := range gotFull {
						if !wbSame(gotFull[i], twinFull[i], false) {
							t.Fatalf("%s: y[%d] = %v, twin %v", what, i-wbPad, gotFull[i], twinFull[i])
						}
					}
					checkSentinels(t, what, gotFull, c.inY)
					checkSentinels(t, what+" (twin)", twinFull, c.inY)
					for l := 0; l < BlockLanes; l++ {
						clear(ml)
						for p := 0; p < 16; p++ {
							for k := 0; k < n; k++ {
								ml[p*nr+k] = c.m[p*c.mStride+k*BlockLanes+l]
							}
						}
						WinogradOutput(n, ml, nr, c.bias[l], w[0], w[1])
						for i := 0; i < 2; i++ {
							for px := 0; px < 2*n; px++ {
								o := i*c.rowStride + px*BlockLanes + l
								v := w[i][px]
								if resMode != wbNoRes {
									v += res[o]
								}
								if relu && v < 0 {
									v = 0
								}
								if !wbSame(got[o], v, false) || relu && got[o] < 0 {
									t.Fatalf("%s: row %d pixel %d lane %d = %v (twin %v), WinogradOutput then residual and clamp %v",
										what, i, px, l, got[o], twin[o], v)
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestWinogradOutputBlockedSpecial checks on every path that a NaN in one
// product reaches exactly the outputs of Aᵀ M A that depend on it, through
// the clamp; a NaN in res only its output, one in bias every output of its
// lane; and that the clamp keeps −0 as VMAXPS(v, 0, v) does (products,
// bias and residual all −0 make Y[0][0] −0), bit for bit with the twin.
func TestWinogradOutputBlockedSpecial(t *testing.T) {
	sets := [2][]int{{0, 1, 2}, {1, 2, 3}} // the ξ of Y[i] (the ν of S[·][j])
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(77, 78))
		for _, n := range wbSizes {
			c := newWBOutputCase(rng, n)
			check := func(what string, resMode int, want func(i, k, j, l int) bool) {
				t.Helper()
				got, twin, _, _, _ := c.run(resMode, true)
				for i := 0; i < 2; i++ {
					for px := 0; px < 2*n; px++ {
						for l := 0; l < BlockLanes; l++ {
							o := i*c.rowStride + px*BlockLanes + l
							w := want(i, px/2, px%2, l)
							if g := got[o]; g != g != w || !wbSame(g, twin[o], true) {
								t.Fatalf("n %d: %s: row %d pixel %d lane %d = %v (twin %v), NaN expected %v", n, what, i, px, l, g, twin[o], w)
							}
						}
					}
				}
			}
			for _, pos := range [][4]int{{0, 0, 0, 0}, {1, 2, 0, 5}, {2, 1, n / 2, 11}, {3, 3, n - 1, 15}, {1, 1, n - 1, 3}} {
				xi, nu, k, l := pos[0], pos[1], pos[2], pos[3]
				mi := (4*xi+nu)*c.mStride + k*BlockLanes + l
				old := c.m[mi]
				c.m[mi] = float32(math.NaN())
				check(fmt.Sprintf("NaN in M[%d][%d] of tile %d lane %d", xi, nu, k, l), wbRes, func(i, kk, j, ll int) bool {
					return kk == k && ll == l && wbHas(sets[i], xi) && wbHas(sets[j], nu)
				})
				c.m[mi] = old
			}
			ro := c.rowStride + (2*n-1)*BlockLanes + 6
			old := c.res[ro]
			c.res[ro] = float32(math.NaN())
			check("NaN in res", wbRes, func(i, k, j, l int) bool { return i == 1 && 2*k+j == 2*n-1 && l == 6 })
			c.res[ro] = old
			oldBias := c.bias[9]
			c.bias[9] = float32(math.NaN())
			check("NaN in bias", wbNoRes, func(i, k, j, l int) bool { return l == 9 })
			c.bias[9] = oldBias

			negZero := float32(math.Copysign(0, -1))
			z := newWBOutputCase(rng, n)
			for p := 0; p < 16; p++ {
				for i := 0; i < n*BlockLanes; i++ {
					z.m[p*z.mStride+i] = negZero
				}
			}
			for l := range z.bias {
				z.bias[l] = negZero
			}
			for i := range z.res[:z.ySize()] {
				if z.inY(i) {
					z.res[i] = negZero
				}
			}
			got, twin, gotFull, twinFull, _ := z.run(wbRes, true)
			for i := range gotFull {
				if !wbSame(gotFull[i], twinFull[i], false) {
					t.Fatalf("n %d: −0: y[%d] = %v, twin %v", n, i-wbPad, gotFull[i], twinFull[i])
				}
			}
			if math.Float32bits(got[0]) != math.Float32bits(negZero) || math.Float32bits(twin[0]) != math.Float32bits(negZero) {
				t.Fatalf("n %d: −0 through the clamp gave %v, twin %v", n, got[0], twin[0])
			}
		}
	})
}

// BenchmarkWinogradBlocked times both transforms of a row of 28 tiles (56
// pixels, a 56×56 image's row of tiles) warm on every path, in GB/s of the
// data read and written once: the input transform reads 4 rows of 58
// pixels and writes 16 planes of 28 vectors; the output transform reads
// 16 planes (and the residual) and writes 2 rows of 56 pixels.
func BenchmarkWinogradBlocked(b *testing.B) {
	const n = 28
	const vec = BlockLanes * 4 // bytes of one pixel
	rng := rand.New(rand.NewPCG(79, 80))
	ic := newWBInputCase(rng, n)
	oc := newWBOutputCase(rng, n)
	v := make([]float32, ic.vSize())
	y := make([]float32, oc.ySize())
	for _, s := range Supported() {
		b.Run(fmt.Sprintf("%s/input/n=%d", s, n), func(b *testing.B) {
			defer SetISA(SetISA(s))
			for b.Loop() {
				WinogradInputBlocked(n, ic.x, ic.rowStride, v, ic.vStride)
			}
			bytes := (4*(2*n+2) + 16*n) * vec
			b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		for _, res := range []bool{false, true} {
			name := "output"
			var r []float32
			bytes := (16*n + 4*n) * vec
			if res {
				name, r = "output+res", oc.res
				bytes += 4 * n * vec
			}
			b.Run(fmt.Sprintf("%s/%s/relu/n=%d", s, name, n), func(b *testing.B) {
				defer SetISA(SetISA(s))
				for b.Loop() {
					WinogradOutputBlocked(n, oc.m, oc.mStride, &oc.bias, r, y, oc.rowStride, true)
				}
				b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
