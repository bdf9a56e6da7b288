package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// attentionRef is Attention in float64 from the float32 operands, rounded
// once: the oracle. It returns NaN rows where a query sees no key.
func attentionRef(m, nk, d int, q []float32, ldq int, k []float32, ldk int, v []float32, ldv int,
	o []float32, ldo int, scale float32, mask AttentionMask) {
	s := make([]float64, nk)
	for i := 0; i < m; i++ {
		mx := math.Inf(-1)
		for j := 0; j < nk; j++ {
			if (mask.Causal && j > i+mask.Diag) || (mask.Keys != nil && mask.Keys[j] != 0) {
				s[j] = math.Inf(-1)
				continue
			}
			dot := 0.0
			for p := 0; p < d; p++ {
				dot += float64(q[i*ldq+p]) * float64(k[j*ldk+p])
			}
			s[j] = float64(scale) * dot
			mx = math.Max(mx, s[j])
		}
		l := 0.0
		for j := range s {
			s[j] = math.Exp(s[j] - mx)
			l += s[j]
		}
		for c := 0; c < d; c++ {
			acc := 0.0
			for j := 0; j < nk; j++ {
				acc += s[j] * float64(v[j*ldv+c])
			}
			o[i*ldo+c] = float32(acc / l)
		}
	}
}

// attentionUnfused is the path Attention replaces: the whole score block
// with Sgemm, the mask, Softmax, and Sgemm with V.
func attentionUnfused(m, nk, d int, q []float32, ldq int, k []float32, ldk int, v []float32, ldv int,
	o []float32, ldo int, scale float32, mask AttentionMask) {
	s := make([]float32, m*nk)
	Sgemm(m, nk, d, q, ldq, k, ldk, true, s, nk)
	for i := 0; i < m; i++ {
		for j := 0; j < nk; j++ {
			if (mask.Causal && j > i+mask.Diag) || (mask.Keys != nil && mask.Keys[j] != 0) {
				s[i*nk+j] = float32(math.Inf(-1))
			}
		}
	}
	Softmax(m, nk, s, nk, s, nk, scale)
	Sgemm(m, d, nk, s, nk, v, ldv, false, o, ldo)
}

// attentionCase is one shape and mask of the Attention tests.
type attentionCase struct {
	m, nk, d int
	mask     AttentionMask
}

func (c attentionCase) String() string {
	return fmt.Sprintf("m=%d/nk=%d/d=%d/causal=%v,diag=%d/keys=%v", c.m, c.nk, c.d, c.mask.Causal, c.mask.Diag, c.mask.Keys != nil)
}

// attentionCases cover one block and several of queries and keys, sizes
// that are multiples of no block or tile (1, 7, 97, 300, 577), head dims
// 20, 64 and 71, causal masks on the diagonal and off it (the second
// half of a sequence's queries, Diag = r0), and key padding masks that
// hide whole key blocks, the first included.
func attentionCases() []attentionCase {
	keys := func(nk int, hidden func(j int) bool) []float32 {
		mk := make([]float32, nk)
		for j := range mk {
			if hidden(j) {
				mk[j] = 1
			}
		}
		return mk
	}
	return []attentionCase{
		{m: 1, nk: 1, d: 20},
		{m: 7, nk: 7, d: 64},
		{m: 97, nk: 300, d: 20},
		{m: 197, nk: 197, d: 64},
		{m: 300, nk: 577, d: 71},
		{m: 577, nk: 577, d: 64},
		{m: 100, nk: 1100, d: 32},
		{m: 300, nk: 300, d: 64, mask: AttentionMask{Causal: true}},
		{m: 577, nk: 577, d: 20, mask: AttentionMask{Causal: true}},
		{m: 150, nk: 600, d: 71, mask: AttentionMask{Causal: true, Diag: 450}},
		{m: 97, nk: 600, d: 64, mask: AttentionMask{Keys: keys(600, func(j int) bool { return j < 300 || j%7 == 3 })}},
		{m: 33, nk: 513, d: 20, mask: AttentionMask{Causal: true, Diag: 400, Keys: keys(513, func(j int) bool { return j%5 == 0 })}},
	}
}

// attentionTol bounds Attention's error against the oracle, relative to
// max |v| (the output is a convex combination of V's rows): the float32
// score and its exp (the softmax test's bound for |v − M| ≤ 16), the
// float32 sums over the keys, and 1/L.
const attentionTol = 1.5e-6

// TestAttentionMatchesOracle runs Attention on every path against the
// float64 oracle and the unfused Sgemm–Softmax–Sgemm path, over odd
// strides and inside guard regions. The scores span about ±12 and grow
// from key block to key block (a ramp in K), so a row's maximum rises
// while it is walked: skipping the rescale of the sum or accumulator,
// or masking the wrong keys, fails here.
func TestAttentionMatchesOracle(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 2))
		for _, c := range attentionCases() {
			ldq, ldk, ldv, ldo := c.d+3, c.d+5, c.d+1, c.d+7
			q, qf := guarded(rng, (c.m-1)*ldq+c.d, true)
			kk, kf := guarded(rng, (c.nk-1)*ldk+c.d, true)
			vv, vf := guarded(rng, (c.nk-1)*ldv+c.d, true)
			for j := 0; j < c.nk; j++ {
				ramp := 1 + 2*float32(j)/float32(c.nk)
				for p := 0; p < c.d; p++ {
					kk[j*ldk+p] *= ramp
				}
			}
			scale := float32(2 / math.Sqrt(float64(c.d)))
			want := make([]float32, (c.m-1)*ldo+c.d)
			attentionRef(c.m, c.nk, c.d, q, ldq, kk, ldk, vv, ldv, want, ldo, scale, c.mask)
			unfused := make([]float32, len(want))
			attentionUnfused(c.m, c.nk, c.d, q, ldq, kk, ldk, vv, ldv, unfused, ldo, scale, c.mask)
			o, of := guarded(rng, len(want), false)
			Attention(c.m, c.nk, c.d, q, ldq, kk, ldk, vv, ldv, o, ldo, scale, c.mask)
			for _, g := range []struct {
				what string
				full []float32
			}{{"q", qf}, {"k", kf}, {"v", vf}, {"o", of}} {
				checkGuards(t, c.String()+" "+g.what, g.full)
			}
			var worst, worstUnfused float64
			for i := 0; i < c.m; i++ {
				for p := 0; p < c.d; p++ {
					at := i*ldo + p
					worst = max(worst, math.Abs(float64(o[at]-want[at])))
					worstUnfused = max(worstUnfused, math.Abs(float64(unfused[at]-want[at])))
					if !(math.Abs(float64(o[at]-want[at])) <= attentionTol) {
						t.Fatalf("%v: o[%d,%d] = %g, oracle %g (unfused %g)", c, i, p, o[at], want[at], unfused[at])
					}
				}
				for p := c.d; p < ldo && i < c.m-1; p++ {
					if o[i*ldo+p] != 0 {
						t.Fatalf("%v: write between rows at o[%d,%d]", c, i, p)
					}
				}
			}
			t.Logf("%v: max error %.3g (unfused %.3g)", c, worst, worstUnfused)
		}
	})
}

// TestAttentionHiddenRows: a query that sees no key gives NaN, as the
// softmax of a row of −∞ does, and so does a NaN score; the other rows
// are unaffected.
func TestAttentionHiddenRows(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		const m, nk, d = 5, 300, 8
		rng := rand.New(rand.NewPCG(5, 6))
		q, kk, vv := make([]float32, m*d), make([]float32, nk*d), make([]float32, nk*d)
		for _, x := range [][]float32{q, kk, vv} {
			for i := range x {
				x[i] = rng.Float32()*2 - 1
			}
		}
		q[3*d] = float32(math.NaN()) // row 3's scores are all NaN
		o := make([]float32, m*d)
		// Row i sees keys j ≤ i − 1: none for row 0.
		mask := AttentionMask{Causal: true, Diag: -1}
		Attention(m, nk, d, q, d, kk, d, vv, d, o, d, 0.3, mask)
		want := make([]float32, m*d)
		attentionRef(m, nk, d, q, d, kk, d, vv, d, want, d, 0.3, mask)
		for i := 0; i < m; i++ {
			for c := 0; c < d; c++ {
				got, w := o[i*d+c], want[i*d+c]
				nan := i == 0 || i == 3
				if nan != math.IsNaN(float64(got)) || (!nan && math.Abs(float64(got-w)) > attentionTol) {
					t.Fatalf("o[%d,%d] = %g, oracle %g", i, c, got, w)
				}
			}
		}
	})
}

// TestFlashRows runs the online-softmax row kernels on every path and
// length against their Go twins: the maximum exactly, the exponentials
// within 2 ulp, and the sum to rounding; neither writes past n.
func TestFlashRows(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		for _, n := range vecSizes[1:] {
			x, xf := guarded(rng, n, true)
			for i := range x {
				x[i] *= 40
			}
			const scale = 0.3
			m := flashMaxRow(n, x, scale)
			if want := flashMaxGo(x, scale); m != want {
				t.Fatalf("n=%d: max %g, Go twin %g", n, m, want)
			}
			ref := append([]float32(nil), x...)
			wantSum := flashExpGo(ref, scale, m)
			sum := flashExpRow(n, x, scale, m)
			checkGuards(t, fmt.Sprintf("n=%d", n), xf)
			for i := range x {
				if !close32(x[i], ref[i], 3e-7, 1e-37) {
					t.Fatalf("n=%d: exp[%d] = %g, Go twin %g", n, i, x[i], ref[i])
				}
			}
			if !close32(sum, wantSum, 1e-6*float64(max(1, n/16)), 0) {
				t.Fatalf("n=%d: sum %g, Go twin %g", n, sum, wantSum)
			}
		}
	})
}
