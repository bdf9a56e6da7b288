package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttentionBF16MatchesUnfused: AttentionBF16 gives the bits of the
// unfused bf16 path it replaces (SgemmBF16, the mask, Softmax, SgemmBF16)
// on every path, for odd and even key counts, keys past a panel, head
// sizes past one panel and not a multiple of it, blocks of query rows
// that end in every kind of tile, a causal mask and a key mask, and block
// sizes of one to three tiles.
func TestAttentionBF16MatchesUnfused(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		if !AttentionBF16Fits(1, 1) {
			t.Skip("AMX: AttentionBF16 does not run")
		}
		rng := rand.New(rand.NewPCG(41, 42))
		for _, sh := range [][3]int{{99, 197, 64}, {98, 197, 64}, {77, 77, 64}, {50, 50, 64}, {13, 7, 16}, {4, 33, 80}, {1, 1, 8}, {25, 64, 32}} {
			m, n, d := sh[0], sh[1], sh[2]
			for _, maskKind := range []string{"none", "causal", "keys"} {
				ldq, ldk, ldv, ldc := 3*d+5, 3*d+1, 2*d+3, d+7
				q, _ := guarded(rng, m*ldq, true)
				k, _ := guarded(rng, n*ldk, true)
				v, _ := guarded(rng, n*ldv, true)
				for i := range q {
					q[i] *= 3
				}
				var mask func(s []float32, rows, lds, i0 int)
				inf := float32(math.Inf(-1))
				switch maskKind {
				case "causal":
					mask = func(s []float32, rows, lds, i0 int) {
						for r := range rows {
							for j := i0 + r + 1; j < n; j++ {
								s[r*lds+j] = inf
							}
						}
					}
				case "keys":
					mask = func(s []float32, rows, lds, _ int) {
						for r := range rows {
							for j := 1; j < n; j += 3 {
								s[r*lds+j] = inf
							}
						}
					}
				}
				lds := n + 3
				s := make([]float32, m*lds)
				want := make([]float32, m*ldc)
				SgemmBF16(m, n, d, q, ldq, k, ldk, true, s, lds)
				if mask != nil {
					mask(s, m, lds, 0)
				}
				Softmax(m, n, s, lds, s, lds, 0.3)
				SgemmBF16(m, d, n, s, lds, v, ldv, false, want, ldc)
				for _, rows := range []int{bf16MR, 2 * bf16MR, 3 * bf16MR} {
					t.Run(fmt.Sprintf("m=%d/n=%d/d=%d/%s/rows=%d", m, n, d, maskKind, rows), func(t *testing.T) {
						defer func(r int) { attentionBF16Rows = r }(attentionBF16Rows)
						attentionBF16Rows = rows
						got := make([]float32, m*ldc)
						for i := range got {
							got[i] = 7 // the gaps between rows stay
						}
						AttentionBF16(m, n, d, q, ldq, k, ldk, v, ldv, got, ldc, 0.3, mask)
						for i := range m {
							for c := range ldc {
								g, w := got[i*ldc+c], want[i*ldc+c]
								if c >= d {
									w = 7
								}
								if math.Float32bits(g) != math.Float32bits(w) {
									t.Fatalf("ctx[%d, %d] = %v, the unfused path gives %v", i, c, g, w)
								}
							}
						}
					})
				}
			}
		}
	})
}

// TestAttentionBF16Reusing: tasks that share a PackedKV give the bits of
// AttentionBF16 on the same operands: two blocks of query rows of one
// head (the second reuses the first's packed K and V), then another head
// under another id (packed again, so its different keys count), then the
// first head's operands under the second's id after Forget (packed again),
// on every path, with key counts and head sizes that leave partial panels.
func TestAttentionBF16Reusing(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		if !AttentionBF16Fits(1, 1) {
			t.Skip("AMX: AttentionBF16 does not run")
		}
		rng := rand.New(rand.NewPCG(43, 44))
		for _, sh := range [][3]int{{99, 197, 64}, {13, 37, 40}} {
			m, n, d := sh[0], sh[1], sh[2]
			type head struct{ q, k, v []float32 }
			heads := make([]head, 2)
			for i := range heads {
				heads[i] = head{randVec(rng, m*d), randVec(rng, n*d), randVec(rng, n*d)}
			}
			run := func(h head, r0, r1 int, kv *PackedKV, id int) []float32 {
				out := make([]float32, (r1-r0)*d)
				AttentionBF16Reusing(r1-r0, n, d, h.q[r0*d:], d, h.k, d, h.v, d, out, d, 0.3, nil, kv, id)
				return out
			}
			var kv PackedKV
			half := m / 2
			steps := []struct {
				h, r0, r1, id int
				forget        bool
			}{{0, 0, half, 0, false}, {0, half, m, 0, false}, {1, 0, m, 1, false}, {0, 0, half, 1, true}}
			for i, st := range steps {
				if st.forget {
					kv.Forget()
				}
				got := run(heads[st.h], st.r0, st.r1, &kv, st.id)
				want := run(heads[st.h], st.r0, st.r1, nil, 0)
				for j := range want {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("m=%d n=%d d=%d step %d: ctx[%d] = %v, without reuse %v", m, n, d, i, j, got[j], want[j])
					}
				}
			}
		}
	})
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}
