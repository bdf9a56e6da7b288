package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// winogradRuns runs f once per kernel path, with the path active, and
// returns its results: the Go path's first, as the twin the others must
// reproduce bit for bit.
func winogradRuns(t *testing.T, f func() []float32) map[ISA][]float32 {
	t.Helper()
	out := map[ISA][]float32{}
	for _, p := range Supported() {
		prev := SetISA(p)
		out[p] = f()
		SetISA(prev)
	}
	return out
}

// checkSameBits fails unless every path's first n values of each output
// equal the Go path's bit for bit, and the Go path's equal want.
func checkSameBits(t *testing.T, what string, runs map[ISA][]float32, want []float32, valid func(i int) bool) {
	t.Helper()
	ref := runs[ISAGo]
	for i, w := range want {
		if !valid(i) {
			continue
		}
		if math.Float32bits(ref[i]) != math.Float32bits(w) {
			t.Fatalf("%s: Go path element %d = %g, want %g", what, i, ref[i], w)
		}
	}
	for p, got := range runs {
		for i := range want {
			if valid(i) && math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("%s on %s: element %d = %g, Go path %g", what, p, i, got[i], ref[i])
			}
		}
	}
}

// TestWinogradInputMatchesLoop checks the input transform on every path
// against the plain product Bᵀ d B (in float64, whose ±1 entries make
// each V an exact sum of four values rounded once; the kernels round
// after each of their two additions, so the check is to the loop the doc
// gives, and to the Go twin bit for bit), for counts that are and are
// not multiples of the vector widths.
func TestWinogradInputMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	bt := [4][4]float64{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}}
	for _, n := range []int{1, 7, 16, 23, 40, 65} {
		wq := 5 + n%7
		phase := n + wq + 40
		vs := n + 20
		q := make([]float32, 4*phase)
		for i := range q {
			q[i] = float32(rng.NormFloat64())
		}
		runs := winogradRuns(t, func() []float32 {
			v := make([]float32, 16*vs)
			WinogradInput(n, q, phase, wq, v, vs)
			return v
		})
		want := make([]float32, 16*vs)
		for tt := 0; tt < n; tt++ {
			var d [4][4]float64
			for a := 0; a < 4; a++ {
				for b := 0; b < 4; b++ {
					d[a][b] = float64(q[((a&1)*2+b&1)*phase+tt+(a>>1)*wq+b>>1])
				}
			}
			for xi := 0; xi < 4; xi++ {
				for nu := 0; nu < 4; nu++ {
					var s float64
					for a := 0; a < 4; a++ {
						for b := 0; b < 4; b++ {
							s += bt[xi][a] * bt[nu][b] * d[a][b]
						}
					}
					want[(4*xi+nu)*vs+tt] = float32(s)
				}
			}
		}
		// Two roundings instead of one: compare the Go path to the exact
		// sum within two ulps, then every path to the Go path exactly.
		for i, w := range want {
			if i%vs < n && math.Abs(float64(runs[ISAGo][i])-float64(w)) > 4*math.Abs(float64(w))*0x1p-24+1e-6 {
				t.Fatalf("n=%d: element %d = %g, want %g", n, i, runs[ISAGo][i], w)
			}
		}
		checkSameBits(t, "WinogradInput", runs, runs[ISAGo], func(i int) bool { return i%vs < n })
	}
}

// TestWinogradOutputMatchesLoop checks the output transform on every path
// against Aᵀ M A + bias in float64 and the Go twin bit for bit.
func TestWinogradOutputMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	at := [2][4]float64{{1, 1, 1, 0}, {0, 1, -1, -1}}
	for _, n := range []int{1, 8, 13, 16, 33, 64} {
		ms := n + 24
		m := make([]float32, 16*ms)
		for i := range m {
			m[i] = float32(rng.NormFloat64())
		}
		bias := float32(rng.NormFloat64())
		runs := winogradRuns(t, func() []float32 {
			w := make([]float32, 4*(n+16))
			WinogradOutput(n, m, ms, bias, w[:2*(n+16)], w[2*(n+16):])
			return w
		})
		want := make([]float32, 4*(n+16))
		for tt := 0; tt < n; tt++ {
			for i := 0; i < 2; i++ {
				for j := 0; j < 2; j++ {
					s := float64(bias)
					for xi := 0; xi < 4; xi++ {
						for nu := 0; nu < 4; nu++ {
							s += at[i][xi] * at[j][nu] * float64(m[(4*xi+nu)*ms+tt])
						}
					}
					want[i*2*(n+16)+2*tt+j] = float32(s)
				}
			}
		}
		valid := func(i int) bool { return i%(2*(n+16)) < 2*n }
		for i, w := range want {
			if valid(i) && math.Abs(float64(runs[ISAGo][i])-float64(w)) > 1e-5*(1+math.Abs(float64(w))) {
				t.Fatalf("n=%d: element %d = %g, want %g", n, i, runs[ISAGo][i], w)
			}
		}
		checkSameBits(t, "WinogradOutput", runs, runs[ISAGo], valid)
	}
}

// TestDeinterleaveMatchesLoop checks the stride-2 split on every path.
func TestDeinterleaveMatchesLoop(t *testing.T) {
	for _, n := range []int{1, 5, 8, 16, 17, 50} {
		src := make([]float32, 2*(n+16))
		for i := range src {
			src[i] = float32(i) + 0.5
		}
		runs := winogradRuns(t, func() []float32 {
			out := make([]float32, 2*(n+16))
			Deinterleave(n, src, out[:n+16], out[n+16:])
			return out
		})
		want := make([]float32, 2*(n+16))
		for j := 0; j < n; j++ {
			want[j], want[n+16+j] = src[2*j], src[2*j+1]
		}
		checkSameBits(t, "Deinterleave", runs, want, func(i int) bool { return i%(n+16) < n })
	}
}

// TestInterleaveMatchesLoop checks the merge of two rows on every path,
// at counts with and without a tail past the whole vectors, and that it
// writes nothing past its 2n values.
func TestInterleaveMatchesLoop(t *testing.T) {
	for _, n := range []int{1, 5, 8, 16, 17, 31, 32, 50} {
		even, odd := make([]float32, n), make([]float32, n)
		for j := range even {
			even[j], odd[j] = float32(j)+0.25, -float32(j)-0.5
		}
		runs := winogradRuns(t, func() []float32 {
			out := make([]float32, 2*n+16)
			for i := range out {
				out[i] = 7
			}
			Interleave(n, even, odd, out[:2*n])
			return out
		})
		want := make([]float32, 2*n+16)
		for i := range want {
			want[i] = 7
		}
		for j := 0; j < n; j++ {
			want[2*j], want[2*j+1] = even[j], odd[j]
		}
		checkSameBits(t, "Interleave", runs, want, func(int) bool { return true })
	}
}
