package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestRoundBF16(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // 1 + 2⁻⁸: a tie, to even (down)
		{0x3f818000, 0x3f82}, // a tie, to even (up)
		{0x3f808001, 0x3f81}, // past the tie
		{0x3f807fff, 0x3f80}, // below the tie
		{0xbf808001, 0xbf81}, // negative
		{0x7f7fffff, 0x7f80}, // the largest float32 rounds to +Inf
		{0x7f800000, 0x7f80}, // +Inf
		{0xff800000, 0xff80}, // −Inf
		{0x7f800001, 0x7fc0}, // a NaN whose payload is in the low half stays NaN
		{0xffc12345, 0xffc1}, // NaN: sign and top payload kept
		{0x007fffff, 0x0000}, // subnormal: zero
		{0x807fffff, 0x8000}, // negative subnormal: −0
		{0x00800000, 0x0080}, // the smallest normal
		{0x80000000, 0x8000}, // −0
	} {
		if got := RoundBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("RoundBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	// Against round-to-nearest-even computed another way: the nearer of the
	// two bf16 neighbours in float64, ties to the even one.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		b := rng.Uint32()
		if e := b >> 23 & 0xff; e == 0 || e >= 0xfe {
			continue
		}
		x := math.Float32frombits(b)
		lo := math.Float32frombits(b &^ 0xffff)
		hi := math.Float32frombits((b &^ 0xffff) + 0x10000)
		dl, dh := math.Abs(float64(x)-float64(lo)), math.Abs(float64(hi)-float64(x))
		want := lo
		if dh < dl || dh == dl && (b>>16)&1 == 1 {
			want = hi
		}
		if got := BF16ToFloat32(RoundBF16(x)); got != want {
			t.Fatalf("RoundBF16(%#08x) = %g, want %g", b, got, want)
		}
	}
}

// bf16Pair is a random pair of bf16 values of wide dynamic range for the
// twin tests: exponents around e0, now and then a subnormal, a zero, an
// Inf or a NaN.
func bf16Pair(rng *rand.Rand, e0 int) uint32 {
	one := func() uint32 {
		switch rng.IntN(40) {
		case 0:
			return uint32(rng.IntN(128)) | uint32(rng.IntN(2))<<15 // subnormal
		case 1:
			return uint32(rng.IntN(2)) << 15 // ±0
		case 2:
			return 0x7f80 | uint32(rng.IntN(2))<<15 // ±Inf
		case 3:
			return 0x7fc1
		}
		e := min(max(e0+rng.IntN(9)-4, 1), 254)
		return uint32(rng.IntN(2))<<15 | uint32(e)<<7 | uint32(rng.IntN(128))
	}
	return one()<<16 | one()
}

// sameFloat reports whether a and b have the same bits, or are both NaN.
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// dotBF16Ref is the oracle of the bf16 GEMM for one output: the sum of
// the rounded products of row a and column b (each of k values), chained
// by dpbf16 from 0 within each block of kcBlockBF16 values of k, the
// blocks' sums added in order in float32, then bias.
func dotBF16Ref(a, b []float32, bias float32) float32 {
	var c float32
	for pc := 0; pc < len(a); pc += kcBlockBF16 {
		var s float32
		for q := pc; q < min(pc+kcBlockBF16, len(a)); q += 2 {
			var a1, b1 float32
			if q+1 < min(pc+kcBlockBF16, len(a)) {
				a1, b1 = a[q+1], b[q+1]
			}
			s = dpbf16(s, pairBF16(a[q], a1), pairBF16(b[q], b1))
		}
		if pc == 0 {
			c = s
		} else {
			c = s + c
		}
	}
	return c + bias
}

// forEachBF16Kernel runs f on every ISA path, and on the AVX-512 path of
// an AMX CPU twice: with the AMX kernel (exact false: its sums are not
// those of a chain of VDPBF16PS, see docs/cpu-bf16.md, "AMX", so the oracle holds
// within amxBound) and with it off (exact true: the VDPBF16PS kernels,
// which the oracle reproduces bit for bit).
func forEachBF16Kernel(t *testing.T, f func(t *testing.T, exact bool)) {
	forEachISA(t, func(t *testing.T) {
		if !bf16UsesAMX() {
			f(t, true)
			return
		}
		t.Run("amx", func(t *testing.T) { f(t, false) })
		prev := SetAMX(false)
		defer SetAMX(prev)
		t.Run("vdpbf16ps", func(t *testing.T) { f(t, true) })
	})
}

// closeBF16 reports whether got agrees with the oracle want: bit for bit
// when exact, else within amxBound of it, for a sum of k products whose
// magnitudes add up to mag (other terms, such as a residual, of
// magnitude extra).
func closeBF16(got, want float32, exact bool, k int, mag, extra float64) bool {
	if exact || sameFloat(got, want) {
		return sameFloat(got, want)
	}
	return math.Abs(float64(got)-float64(want)) <= amxBound(k, mag)+0x1p-22*(math.Abs(float64(want))+extra)
}

// amxBound is how far the AMX kernel's sum of k products (magnitudes
// adding up to mag) may be from the oracle's chain of float32 roundings:
// each of the two may be off the exact sum by about a float32 rounding per
// 16 pairs (AMX, measured) or per pair (the chain's random walk), with a
// margin of 4.
func amxBound(k int, mag float64) float64 {
	return 4 * 0x1p-24 * mag * math.Sqrt(float64(k)+16)
}

// TestSgemmBF16MatchesOracle runs the bf16 GEMM (on AVX-512 with
// AVX512_BF16 the VDPBF16PS kernels, elsewhere the Go twin) against
// dotBF16Ref bit for bit, through SgemmBF16 (B packed per call) and
// PackBTBF16/PackBNBF16 with SgemmPackedEpi (bias, residual, GELU), on
// shapes that are and are not multiples of the tile, over more than one
// block of k, inside NaN guard regions; and the result against the
// float32 product within bf16's rounding.
func TestSgemmBF16MatchesOracle(t *testing.T) {
	forEachBF16Kernel(t, func(t *testing.T, exact bool) {
		t.Logf("bf16 microkernel: %s", BF16Kernel())
		rng := rand.New(rand.NewPCG(5, 6))
		shapes := [][3]int{{1, 1, 1}, {1, 5, 3}, {3, 7, 17}, {4, 32, 16}, {5, 33, 31}, {8, 64, 32}, {12, 32, 2},
			{13, 37, 147}, {17, 19, 64}, {31, 5, 129}, {64, 48, 768}, {7, 96, 1}, {25, 70, 40},
			{14, 40, kcBlockBF16 + 77}, {3, 33, 2*kcBlockBF16 + 1}, {101, 300, 70}}
		for _, s := range shapes {
			for _, mode := range []string{"Sgemm NT", "Sgemm NN", "packed NT+epi", "packed NN"} {
				m, n, k := s[0], s[1], s[2]
				lda, ldc := k+rng.IntN(3), n+rng.IntN(3)
				a, af := guarded(rng, (m-1)*lda+k, true)
				bt, btf := guarded(rng, n*k, true) // B [n, k]
				bn := make([]float32, k*n)         // the same as B [k, n]
				for j := range n {
					for q := range k {
						bn[q*n+j] = bt[j*k+q]
					}
				}
				c, cf := guarded(rng, (m-1)*ldc+n, false)
				var epi Epilogue
				switch mode {
				case "Sgemm NT":
					SgemmBF16(m, n, k, a, lda, bt, k, true, c, ldc)
				case "Sgemm NN":
					SgemmBF16(m, n, k, a, lda, bn, n, false, c, ldc)
				case "packed NT+epi":
					epi.Bias, _ = guarded(rng, n, true)
					epi.Residual, _ = guarded(rng, m*n, true)
					epi.LdR = n
					if m%2 == 1 {
						epi.Act = ActGELU
					}
					SgemmPackedEpi(m, a, lda, PackBTBF16(n, k, bt, k), c, ldc, epi, 0, n)
				case "packed NN":
					SgemmPacked(m, a, lda, PackBNBF16(n, k, bn, n), c, ldc, nil, 0, n)
				}
				name := fmt.Sprintf("%s m%d n%d k%d", mode, m, n, k)
				checkGuards(t, name+" A", af)
				checkGuards(t, name+" B", btf)
				checkGuards(t, name+" C", cf)
				for i := range m {
					for j := range n {
						var bias float32
						if epi.Bias != nil {
							bias = epi.Bias[j]
						}
						want := dotBF16Ref(a[i*lda:i*lda+k], bt[j*k:j*k+k], bias)
						if epi.Act == ActGELU {
							g := []float32{want}
							GELU(1, g, g)
							want = g[0]
						}
						if epi.Residual != nil {
							want += epi.Residual[i*n+j]
						}
						got := c[i*ldc+j]
						var mag, extra float64
						for q := range k {
							mag += math.Abs(float64(bf16DAZ(RoundBF16(a[i*lda+q]))) * float64(bf16DAZ(RoundBF16(bt[j*k+q]))))
						}
						if epi.Residual != nil {
							extra = math.Abs(float64(epi.Residual[i*n+j]))
						}
						if !closeBF16(got, want, exact, k, mag, extra) {
							t.Fatalf("%s: C[%d,%d] = %g (%#08x), oracle %g (%#08x)", name, i, j, got, math.Float32bits(got), want, math.Float32bits(want))
						}
						if epi.Act == ActNone && epi.Residual == nil {
							var exact, mag float64
							for q := range k {
								exact += float64(a[i*lda+q]) * float64(bt[j*k+q])
								mag += math.Abs(float64(a[i*lda+q]) * float64(bt[j*k+q]))
							}
							if d := math.Abs(float64(got) - exact); d > 2*0x1p-8*mag+1e-6 {
								t.Fatalf("%s: C[%d,%d] = %g, float64 product %g: beyond bf16 rounding (%g)", name, i, j, got, exact, mag)
							}
						}
					}
				}
			}
		}
	})
}

// TestGemmBF16TileTwin compares the microkernel of the active path with
// its Go twin on wide-range bf16 pairs (subnormals, zeros, Inf, NaN, sums
// near float32's smallest normal), every row count, with and without the
// old c, bias and residual, bit for bit.
func TestGemmBF16TileTwin(t *testing.T) {
	if !HasBF16() {
		t.Skip("no AVX512_BF16 here: the Go twin is the only bf16 microkernel (TestSgemmBF16MatchesOracle runs it)")
	}
	prev := SetISA(ISAAVX512)
	defer SetISA(prev)
	rng := rand.New(rand.NewPCG(7, 8))
	for it := range 400 {
		rows := []int{4, 8, 12}[it%3]
		kp := 1 + rng.IntN(40)
		lda := kp + rng.IntN(5)
		e0 := []int{127, 64, 100, 160}[it%4] // products near 1, near 2⁻¹²⁶, and wide
		a := make([]uint32, rows*lda)
		b := make([]uint32, kp*bf16NR)
		for i := range a {
			a[i] = bf16Pair(rng, e0)
		}
		for i := range b {
			b[i] = bf16Pair(rng, e0)
		}
		ldc := bf16NR + rng.IntN(3)
		c0 := make([]float32, rows*ldc)
		for i := range c0 {
			c0[i] = rng.Float32() - 0.5
		}
		var bias, res []float32
		acc := it / 3 % 2
		if it%5 == 0 {
			bias = make([]float32, bf16NR)
			res = make([]float32, rows*bf16NR)
			for i := range bias {
				bias[i] = rng.Float32()
			}
			for i := range res {
				res[i] = rng.Float32()
			}
		}
		got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
		gemmBF16Asm(rows, kp, a, lda, b, got, ldc, acc, bias, res, bf16NR, nil)
		gemmBF16Go(rows, kp, a, lda, b, want, ldc, acc, bias, res, bf16NR, nil)
		for i := range got {
			if !sameFloat(got[i], want[i]) {
				t.Fatalf("case %d (rows %d, kp %d, accumulate %d): c[%d] = %#08x, twin %#08x", it, rows, kp, acc, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}

// TestSgemmSourceBF16 runs the bf16 GEMM on convolution windows packed
// straight from the image (WindowsA through SgemmSource: the source's
// mr-row panels regrouped into rows of pairs, or rows of pairs written by
// WindowsA.PackPairs for an even block of k) against dotBF16Ref on the
// explicit unfolded matrix, bit for bit: odd and even k, k past one block,
// padded and strided windows, a last row panel not full.
func TestSgemmSourceBF16(t *testing.T) {
	forEachBF16Kernel(t, func(t *testing.T, exact bool) {
		rng := rand.New(rand.NewPCG(13, 14))
		for _, g := range []UnfoldGeom{
			{C: 3, H: 31, W: 29, KH: 7, KW: 7, SH: 4, SW: 4, PH: 2, PW: 2, DH: 1, DW: 1},  // k = 147
			{C: 5, H: 13, W: 17, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},  // k = 45, unit stride
			{C: 45, H: 11, W: 10, KH: 7, KW: 7, SH: 2, SW: 1, PH: 3, PW: 3, DH: 1, DW: 1}, // k = 2205: two blocks, the last odd
			{C: 4, H: 16, W: 16, KH: 4, KW: 4, SH: 4, SW: 4, PH: 0, PW: 0, DH: 1, DW: 1},  // k = 64, patches
			{C: 6, H: 9, W: 11, KH: 3, KW: 3, SH: 2, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},   // k = 54: PackPairs, windows in the padding
			{C: 3, H: 48, W: 40, KH: 16, KW: 16, SH: 16, SW: 16, DH: 1, DW: 1},            // k = 768, ViT's patches: PackPairs by runs
		} {
			g.OH = (g.H+2*g.PH-g.DH*(g.KH-1)-1)/g.SH + 1
			g.OW = (g.W+2*g.PW-g.DW*(g.KW-1)-1)/g.SW + 1
			k, m, n := g.C*g.KH*g.KW, g.OH*g.OW, 37
			x, _ := guarded(rng, g.C*g.H*g.W, true)
			w, _ := guarded(rng, n*k, true)
			cols := make([]float32, m*k)
			UnfoldRows(g, x, cols, 0, m)
			c, cf := guarded(rng, m*n, false)
			SgemmSource(m, NewWindowsA(g, x), PackBTBF16(n, k, w, k), c, n, Epilogue{})
			checkGuards(t, fmt.Sprintf("%+v C", g), cf)
			checkUnfoldedBF16(t, fmt.Sprintf("%+v", g), c, cols, w, m, n, k, exact)
		}
	})
}

// checkUnfoldedBF16 checks C [m, n] = A·Bᵀ of the bf16 GEMM against
// dotBF16Ref on the explicit A [m, k] and B [n, k], element by element
// (closeBF16: bit for bit when exact).
func checkUnfoldedBF16(t *testing.T, what string, c, a, b []float32, m, n, k int, exact bool) {
	t.Helper()
	for i := range m {
		for j := range n {
			var mag float64
			for q := range k {
				mag += math.Abs(float64(bf16DAZ(RoundBF16(a[i*k+q]))) * float64(bf16DAZ(RoundBF16(b[j*k+q]))))
			}
			if want := dotBF16Ref(a[i*k:i*k+k], b[j*k:j*k+k], 0); !closeBF16(c[i*n+j], want, exact, k, mag, 0) {
				t.Fatalf("%s: C[%d,%d] = %g, oracle %g", what, i, j, c[i*n+j], want)
			}
		}
	}
}

// TestPackPairsScaled: packPairsScaled(src, s) is packPairs of the
// products s·src rounded to float32, bit for bit, on every path and
// length (whole blocks of 32, a tail, an odd last value), with NaN, ±Inf,
// subnormal products and ties to even among the values.
func TestPackPairsScaled(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(15, 16))
		for _, n := range []int{1, 2, 7, 31, 32, 33, 64, 197, 200} {
			src := make([]float32, n)
			for i := range src {
				switch i % 9 {
				case 1:
					src[i] = math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal
				case 2:
					src[i] = math.Float32frombits(rng.Uint32()&0xffff0000 | 0x8000) // a tie
				case 3:
					src[i] = math.Float32frombits(rng.Uint32() | 0x7f800000) // Inf or NaN
				default:
					src[i] = rng.Float32()*2 - 1
				}
			}
			for _, scale := range []float32{1, 0.0051, 3e-39, 7} {
				prod := make([]float32, n)
				for i, v := range src {
					prod[i] = scale * v
				}
				want := make([]uint32, (n+1)/2)
				got := make([]uint32, (n+1)/2)
				packPairs(want, prod)
				packPairsScaled(got, src, scale)
				for p := range want {
					if got[p] != want[p] {
						t.Fatalf("n=%d scale=%g: pair %d = %#08x, packPairs of the products %#08x", n, scale, p, got[p], want[p])
					}
				}
			}
		}
	})
}
