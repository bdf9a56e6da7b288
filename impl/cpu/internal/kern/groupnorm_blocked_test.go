package kern

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// blockedSizes are the pixel counts of the blocked GroupNorm tests: 0, 1,
// around the unrolls (four pixels on AVX-512, one on AVX2) and a plane of
// 64×64 pixels plus a remainder.
var blockedSizes = []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 64, 4096 + 3}

// blockedPad is the floats of sentinel on either side of a plane.
const blockedPad = 4 * BlockLanes

// blockedSentinel is the value around a plane: a signalling NaN, which no
// kernel writes (their NaNs are quiet), compared by its bits.
var blockedSentinel = math.Float32frombits(0x7fa5a5a5)

// sentinelPlane returns a plane of n pixels (zeros) inside blockedPad
// sentinels on either side, and the whole buffer.
func sentinelPlane(n int) (inner, full []float32) {
	full = make([]float32, n*BlockLanes+2*blockedPad)
	for i := range full {
		full[i] = blockedSentinel
	}
	inner = full[blockedPad : blockedPad+n*BlockLanes : blockedPad+n*BlockLanes]
	clear(inner)
	return inner, full
}

// checkSentinel fails if anything outside the plane in full was written.
func checkSentinel(t *testing.T, what string, full []float32) {
	t.Helper()
	for i, v := range full {
		if (i < blockedPad || i >= len(full)-blockedPad) && math.Float32bits(v) != math.Float32bits(blockedSentinel) {
			t.Fatalf("%s: write past the plane at float %d (%g)", what, i-blockedPad, v)
		}
	}
}

// momentsBlockedRef is the oracle of MomentsBlocked: s1[l] + Σ d and
// s2[l] + Σ d² exactly (256-bit), rounded once, and Σ|d| + |s1[l]| (the
// scale of s1's rounding errors).
func momentsBlockedRef(n int, x []float32, shift *[16]float32, s1, s2 *[16]float64) (r1, r2, mag [16]float64) {
	f := func(v float64) *big.Float { return new(big.Float).SetPrec(256).SetFloat64(v) }
	for l := 0; l < BlockLanes; l++ {
		a, b := f(s1[l]), f(s2[l])
		m := math.Abs(s1[l])
		for p := 0; p < n; p++ {
			d := float64(x[p*BlockLanes+l]) - float64(shift[l]) // exact
			a.Add(a, f(d))
			b.Add(b, new(big.Float).SetPrec(256).Mul(f(d), f(d)))
			m += math.Abs(d)
		}
		r1[l], _ = a.Float64()
		r2[l], _ = b.Float64()
		mag[l] = m
	}
	return r1, r2, mag
}

// TestMomentsBlocked runs MomentsBlocked on every path and size, on data
// 1000 + U(−1, 1) (a common offset 10³ times the spread) with the shift
// near the data, at the data's first pixel and at 0 (no shift, where d² is
// 10⁶ times larger), adding to nonzero sums, against the exact sums within
// 1e-12 relative. x lies inside NaN guards (a read past the plane makes
// the sums NaN) and s1, s2 inside sentinels; the Go twin is checked too.
func TestMomentsBlocked(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	const tol = 1e-12
	for _, n := range blockedSizes {
		x, full := guarded(rng, n*BlockLanes, true)
		for i := range x {
			x[i] += 1000
		}
		var shifts [3][16]float32
		for l := range BlockLanes {
			shifts[0][l] = 1000 + float32(l)/64
			if n > 0 {
				shifts[1][l] = x[l]
			}
		}
		var in1, in2 [16]float64
		for l := range BlockLanes {
			in1[l], in2[l] = rng.Float64()*10-5, rng.Float64()*5
		}
		for si, shift := range shifts {
			want1, want2, mag := momentsBlockedRef(n, x, &shift, &in1, &in2)
			check := func(t *testing.T, what string, s1, s2 *[16]float64) {
				t.Helper()
				for l := range BlockLanes {
					if e := math.Abs(s1[l] - want1[l]); !(e <= tol*mag[l]) {
						t.Fatalf("%s: s1[%d] = %.17g, exact %.17g (error %.3g of %.3g)", what, l, s1[l], want1[l], e, mag[l])
					}
					if e := math.Abs(s2[l] - want2[l]); !(e <= tol*want2[l]) {
						t.Fatalf("%s: s2[%d] = %.17g, exact %.17g (rel error %.3g)", what, l, s2[l], want2[l], e/want2[l])
					}
				}
			}
			name := fmt.Sprintf("n=%d/shift%d", n, si)
			t.Run(name, func(t *testing.T) {
				forEachISA(t, func(t *testing.T) {
					// s1 and s2 between sentinels.
					var buf [4 * BlockLanes]float64
					for i := range buf {
						buf[i] = -7
					}
					s1, s2 := (*[16]float64)(buf[BlockLanes:]), (*[16]float64)(buf[2*BlockLanes:])
					*s1, *s2 = in1, in2
					MomentsBlocked(n, x, &shift, s1, s2)
					checkGuards(t, name, full)
					for i := range buf {
						if (i < BlockLanes || i >= 3*BlockLanes) && buf[i] != -7 {
							t.Fatalf("%s: write past s1 or s2 at %d", name, i-BlockLanes)
						}
					}
					if n == 0 && (*s1 != in1 || *s2 != in2) {
						t.Fatalf("%s: n = 0 changed the sums", name)
					}
					check(t, name, s1, s2)
				})
				s1, s2 := in1, in2
				if n > 0 {
					momentsBlockedGo(n, x, &shift, &s1, &s2)
				}
				check(t, name+"/twin", &s1, &s2)
			})
		}
	}
}

// blockedChannels returns 16 channels of n values, 16·U(−1, 1) with ±0,
// ±Inf, NaN and values past the exp cut-off among them, and their NCHW16c
// plane (x[16p + l] = ch[l][p]) inside sentinels.
func blockedChannels(rng *rand.Rand, n int) (ch [16][]float32, x, full []float32) {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), 200, -200, 1e-30, -1e-30}
	x, full = sentinelPlane(n)
	for l := range ch {
		ch[l] = make([]float32, n)
		for p := range ch[l] {
			v := (rng.Float32()*2 - 1) * 16
			if rng.IntN(16) == 0 {
				v = special[rng.IntN(len(special))]
			}
			ch[l][p] = v
			x[p*BlockLanes+l] = v
		}
	}
	return ch, x, full
}

// blockedCoefs returns GroupNorm's per-channel a and b for the 16 lanes:
// affineCoefs first, then random ones.
func blockedCoefs(rng *rand.Rand) (a, b [16]float32) {
	for l := range BlockLanes {
		if l < len(affineCoefs) {
			a[l], b[l] = affineCoefs[l][0], affineCoefs[l][1]
		} else {
			a[l], b[l] = (rng.Float32()*2-1)*3, (rng.Float32()*2-1)*2
		}
	}
	return a, b
}

// TestAffineBlockedMatchesAffine: on every path, AffineBlocked on a plane
// equals, bit for bit, Affine (AffineSiLU with silu) with a[l], b[l] on
// each channel l of the same data in NCHW, out of place and in place,
// writing nothing past the plane and leaving x alone; the Go twin equals
// the Go path's affineGo and siluGo.
func TestAffineBlockedMatchesAffine(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	for _, silu := range []bool{false, true} {
		for _, n := range blockedSizes {
			ch, x, xFull := blockedChannels(rng, n)
			a, b := blockedCoefs(rng)
			name := fmt.Sprintf("silu=%v/n=%d", silu, n)
			// want is the per-channel result, transposed to NCHW16c.
			want := func() []float32 {
				w := make([]float32, n*BlockLanes)
				out := make([]float32, n)
				for l := range ch {
					if silu {
						AffineSiLU(n, a[l], b[l], ch[l], out)
					} else {
						Affine(n, a[l], b[l], ch[l], out)
					}
					for p, v := range out {
						w[p*BlockLanes+l] = v
					}
				}
				return w
			}
			check := func(t *testing.T, what string, got, want []float32) {
				t.Helper()
				for i := range want {
					if !sameFloat(got[i], want[i]) {
						p, l := i/BlockLanes, i%BlockLanes
						t.Fatalf("%s: pixel %d lane %d (x = %g, a = %g, b = %g): %g (%#08x), per channel %g (%#08x)", what, p, l,
							x[i], a[l], b[l], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
			t.Run(name, func(t *testing.T) {
				forEachISA(t, func(t *testing.T) {
					w := want()
					xCopy := append([]float32(nil), xFull...)
					y, yFull := sentinelPlane(n)
					AffineBlocked(n, &a, &b, x, y, silu)
					checkSentinel(t, name, yFull)
					check(t, name, y, w)
					for i := range xFull {
						if math.Float32bits(xFull[i]) != math.Float32bits(xCopy[i]) {
							t.Fatalf("%s: x changed at float %d", name, i-blockedPad)
						}
					}
					z, zFull := sentinelPlane(n)
					copy(z, x)
					AffineBlocked(n, &a, &b, z, z, silu)
					checkSentinel(t, name+"/in place", zFull)
					check(t, name+"/in place", z, w)
				})
				// The twin against the Go path's scalar code, on any build.
				prev := SetISA(ISAGo)
				defer SetISA(prev)
				w := want()
				y, yFull := sentinelPlane(n)
				if n > 0 {
					affineBlockedGo(n, &a, &b, x, y, silu)
				}
				checkSentinel(t, name+"/twin", yFull)
				check(t, name+"/twin", y, w)
			})
		}
	}
}

// TestBlockedGroupNormBounds: a plane shorter than 16·n floats panics
// before anything is read or written; n = 0 accepts empty slices.
func TestBlockedGroupNormBounds(t *testing.T) {
	var a, b, shift [16]float32
	var s1, s2 [16]float64
	MomentsBlocked(0, nil, &shift, &s1, &s2)
	AffineBlocked(0, &a, &b, nil, nil, true)
	short := make([]float32, 3*BlockLanes-1)
	long := make([]float32, 3*BlockLanes)
	for _, f := range []struct {
		name string
		f    func()
	}{
		{"MomentsBlocked", func() { MomentsBlocked(3, short, &shift, &s1, &s2) }},
		{"AffineBlocked x", func() { AffineBlocked(3, &a, &b, short, long, false) }},
		{"AffineBlocked y", func() { AffineBlocked(3, &a, &b, long, short, true) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on a short plane did not panic", f.name)
				}
			}()
			f.f()
		}()
	}
}

// BenchmarkGroupNormBlocked times the two kernels on a 64×64-pixel plane
// (4096 pixels, 256 KiB) per path; the bytes are the plane's, read once
// (moments) or read and written (affine).
func BenchmarkGroupNormBlocked(b *testing.B) {
	const n = 4096
	rng := rand.New(rand.NewPCG(65, 66))
	x := make([]float32, n*BlockLanes)
	for i := range x {
		x[i] = rng.Float32()*2 - 1
	}
	y := make([]float32, len(x))
	var shift, ca, cb [16]float32
	for l := range ca {
		ca[l], cb[l] = 1.5, 0.25
	}
	var s1, s2 [16]float64
	for _, p := range Supported() {
		b.Run(fmt.Sprintf("%s/moments", p), func(b *testing.B) {
			defer SetISA(SetISA(p))
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				MomentsBlocked(n, x, &shift, &s1, &s2)
			}
		})
		for _, silu := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/affine/silu=%v", p, silu), func(b *testing.B) {
				defer SetISA(SetISA(p))
				b.SetBytes(int64(8 * len(x)))
				for b.Loop() {
					AffineBlocked(n, &ca, &cb, x, y, silu)
				}
			})
		}
	}
}
