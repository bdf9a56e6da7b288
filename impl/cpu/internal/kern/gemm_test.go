package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSgemmNTMatchesOracle runs C = A·Bᵀ (+ bias) on every path against
// the plain loop on
// shapes that are and are not multiples of the vector widths, with strides
// larger than k, with and without bias, inside NaN guard regions.
func TestSgemmNTMatchesOracle(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		forDirectAndPacked(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			shapes := [][3]int{{1, 1, 1}, {1, 5, 3}, {3, 7, 17}, {4, 4, 16}, {5, 9, 31}, {8, 8, 32}, {13, 37, 147},
				{16, 33, 63}, {17, 19, 64}, {31, 5, 129}, {64, 48, 768}, {7, 96, 1}, {2, 3, 255},
				{14, 40, kcBlock + 77}, {3, 33, 2*kcBlock + 1}, {101, 300, 70}, {30, 257, 12}, {23, 70, 40},
				{9, 33, 65}, {22, 50, 90}, {50, 70, 300}, {77, 40, 64}, // every count of tail rows
				{10, 40, 50}, {11, 64, 100}, {32, 40, 64}, {43, 300, 80}} // balanced tiles whose last is 10, 11 or 9 rows
			for _, s := range shapes {
				for _, withBias := range []bool{false, true} {
					m, n, k := s[0], s[1], s[2]
					lda, ldb, ldc := k+rng.IntN(3), k+rng.IntN(3), n+rng.IntN(3)
					a, af := guarded(rng, (m-1)*lda+k, true)
					b, bf := guarded(rng, (n-1)*ldb+k, true)
					c, cf := guarded(rng, (m-1)*ldc+n, false)
					want := make([]float32, len(c))
					var bias []float32
					if withBias {
						bias, _ = guarded(rng, n, true)
					}
					sgemmNTRef(m, n, k, a, lda, b, ldb, want, ldc, bias)
					// Without bias through Sgemm (B packed per call into the
					// pool), with bias through PackBT and SgemmPacked.
					if withBias {
						SgemmPacked(m, a, lda, PackBT(n, k, b, ldb), c, ldc, bias, 0, n)
					} else {
						Sgemm(m, n, k, a, lda, b, ldb, true, c, ldc)
					}
					name := fmt.Sprintf("m%d n%d k%d bias=%v", m, n, k, withBias)
					checkGuards(t, name+" A", af)
					checkGuards(t, name+" B", bf)
					checkGuards(t, name+" C", cf)
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							g, w := c[i*ldc+j], want[i*ldc+j]
							if math.Abs(float64(g-w)) > 1e-5*math.Sqrt(float64(k))+1e-6 {
								t.Fatalf("%s: C[%d,%d] = %g, oracle %g", name, i, j, g, w)
							}
						}
					}
				}
			}
		})
	})
}

func BenchmarkSgemmNT(b *testing.B) {
	for _, s := range [][3]int{{196, 768, 768}, {256, 256, 256}} {
		m, n, k := s[0], s[1], s[2]
		rng := rand.New(rand.NewPCG(1, 2))
		a, _ := guarded(rng, m*k, true)
		w, _ := guarded(rng, n*k, true)
		c := make([]float32, m*n)
		for _, p := range Supported() {
			b.Run(fmt.Sprintf("isa=%s/m=%d/n=%d/k=%d", p, m, n, k), func(b *testing.B) {
				prev := SetISA(p)
				defer SetISA(prev)
				pb := PackBT(n, k, w, k) // weights are packed once, at upload
				for b.Loop() {
					SgemmPacked(m, a, k, pb, c, n, nil, 0, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestSgemmPackedColumnRanges: workers that each compute a panel-aligned
// range of columns from one PackedB together produce the whole product,
// and no worker writes outside its columns.
func TestSgemmPackedColumnRanges(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, s := range [][3]int{{13, 70, 300}, {196, 97, 513}, {1, 33, 17}, {25, 64, 256}} {
			m, n, k := s[0], s[1], s[2]
			a, _ := guarded(rng, m*k, true)
			b, _ := guarded(rng, n*k, true)
			bias, _ := guarded(rng, n, true)
			want := make([]float32, m*n)
			sgemmNTRef(m, n, k, a, k, b, k, want, n, bias)
			pb := PackBT(n, k, b, k)
			c, cf := guarded(rng, m*n, false)
			w := pb.PanelWidth()
			for j0 := 0; j0 < n; j0 += 2 * w {
				j1 := min(n, j0+2*w)
				for i := range c {
					if j := i % n; j >= j0 && j < j1 {
						c[i] = float32(math.NaN()) // must be overwritten
					}
				}
				SgemmPacked(m, a, k, pb, c, n, bias, j0, j1)
			}
			checkGuards(t, fmt.Sprintf("m%d n%d k%d", m, n, k), cf)
			for i := range want {
				if d := math.Abs(float64(c[i] - want[i])); !(d <= 1e-5*math.Sqrt(float64(k))+1e-6) {
					t.Fatalf("m%d n%d k%d: C[%d] = %g, oracle %g", m, n, k, i, c[i], want[i])
				}
			}
		}
	})
}

// sgemmNNRef returns A·B [m, n] for A [m, k] (row stride k) and B [k, n]
// (row stride ldb, not transposed), by the reference loop on Bᵀ.
func sgemmNNRef(m, n, k int, a, b []float32, ldb int) []float32 {
	bt := make([]float32, n*k)
	for p := 0; p < k; p++ {
		for j := 0; j < n; j++ {
			bt[j*k+p] = b[p*ldb+j]
		}
	}
	want := make([]float32, m*n)
	sgemmNTRef(m, n, k, a, k, bt, k, want, n, nil)
	return want
}

// TestPackBNMatchesOracle: x @ B with B [k, n] packed as it is equals the
// oracle on the transposed operand, on every path.
// TestPackBTLayout: a weight B [n, k] packed as Bᵀ holds, in each block
// of kcBlock steps, its column panels of nr one after another, step by
// step: B[j, p] at panel j/nr, step p, lane j mod nr, and zeros in the
// lanes of a last, partial panel past n (full panels, a partial panel of
// 5, 16 and 18 rows, one of 1, two blocks of k), on every SIMD path.
func TestPackBTLayout(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		for _, s := range [][2]int{{5, 64}, {16, 3}, {50, 2048}, {33, 70}, {64, 9}} {
			n, k := s[0], s[1]
			ldb := k + 3
			b := make([]float32, n*ldb)
			for i := range b {
				b[i] = float32(i%1000) + 1 // never 0
			}
			p := PackBT(n, k, b, ldb)
			nr := p.PanelWidth()
			if nr == 1 {
				return // the Go path keeps B as it is
			}
			panels := p.Panels()
			for pc := 0; pc < k; pc += kcBlock {
				kb := min(kcBlock, k-pc)
				block := p.data[panels*nr*pc:]
				for j := 0; j < panels*nr; j++ {
					for q := 0; q < kb; q++ {
						got := block[(j/nr)*nr*kb+q*nr+j%nr]
						want := float32(0)
						if j < n {
							want = b[j*ldb+pc+q]
						}
						if got != want {
							t.Fatalf("n%d k%d: column %d, step %d: packed %v, want %v", n, k, j, pc+q, got, want)
						}
					}
				}
			}
		}
	})
}

func TestPackBNMatchesOracle(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		for _, s := range [][3]int{{33, 65, 17}, {5, 3, 2}, {100, 130, 600}} {
			m, n, k := s[0], s[1], s[2]
			a, _ := guarded(rng, m*k, true)
			b, bf := guarded(rng, k*n, true)
			want := sgemmNNRef(m, n, k, a, b, n)
			c, cf := guarded(rng, m*n, false)
			SgemmPacked(m, a, k, PackBN(n, k, b, n), c, n, nil, 0, n)
			checkGuards(t, "C", cf)
			checkGuards(t, "B", bf)
			for i := range want {
				if d := math.Abs(float64(c[i] - want[i])); !(d <= 1e-5*math.Sqrt(float64(k))+1e-6) {
					t.Fatalf("m%d n%d k%d: C[%d] = %g, oracle %g", m, n, k, i, c[i], want[i])
				}
			}
		}
	})
}

// TestSgemmRowGroupsMatchesOracle: the product of SgemmRowGroups, B read
// from a wider matrix (ldb > n) and C written into a wider one, matches
// the oracle on every path; done sees each group once, in order, the last
// one partial; nothing outside the operands is touched.
func TestSgemmRowGroupsMatchesOracle(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		for _, s := range [][4]int{{50, 70, 33, 24}, {12, 5, 3, 12}, {31, 300, 260, 24}, {7, 1, 1, 6}} {
			m, n, k, group := s[0], s[1], s[2], s[3]
			ldb, ldc := n+5, n+3
			a, af := guarded(rng, m*k, true)
			b, bf := guarded(rng, k*ldb, true)
			want := sgemmNNRef(m, n, k, a, b, ldb)
			c, cf := guarded(rng, (m-1)*ldc+n, false)
			keep := slices.Clone(c)
			next := 0
			SgemmRowGroups(m, n, k, a, k, b, ldb, c, ldc, group, func(i0, i1 int) {
				if i0 != next || i1 != min(i0+group, m) {
					t.Fatalf("m%d group %d: done(%d, %d) after rows [0, %d)", m, group, i0, i1, next)
				}
				next = i1
			})
			if next != m {
				t.Fatalf("m%d: done saw rows [0, %d)", m, next)
			}
			checkGuards(t, "A", af)
			checkGuards(t, "B", bf)
			checkGuards(t, "C", cf)
			for i := 0; i < m; i++ {
				for j := 0; j < ldc && i*ldc+j < len(c); j++ {
					got := c[i*ldc+j]
					if j >= n {
						if got != keep[i*ldc+j] {
							t.Fatalf("m%d n%d k%d: C[%d, %d] past the columns changed", m, n, k, i, j)
						}
						continue
					}
					if d := math.Abs(float64(got - want[i*n+j])); !(d <= 1e-5*math.Sqrt(float64(k))+1e-6) {
						t.Fatalf("m%d n%d k%d: C[%d, %d] = %g, oracle %g", m, n, k, i, j, got, want[i*n+j])
					}
				}
			}
		}
	})
}

// TestSgemmStridedHeads: per-head products on strided views of a fused qkv
// tensor [N, 3, H, d] (QKᵀ as NT, then P·V as NN) match the oracle, on
// every path, and reuse pooled buffers.
func TestSgemmStridedHeads(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		for _, s := range [][3]int{{197, 3, 64}, {50, 2, 30}, {7, 1, 71}} {
			n, heads, d := s[0], s[1], s[2]
			e := heads * d
			qkv, qf := guarded(rng, n*3*e, true)
			for h := 0; h < heads; h++ {
				q, k, v := qkv[h*d:], qkv[e+h*d:], qkv[2*e+h*d:]
				scores, sf := guarded(rng, n*n, false)
				Sgemm(n, n, d, q, 3*e, k, 3*e, true, scores, n)
				want := make([]float32, n*n)
				sgemmNTRef(n, n, d, q, 3*e, k, 3*e, want, n, nil)
				closeTo(t, "QKᵀ", scores, want, d)
				out, of := guarded(rng, n*d, false)
				Sgemm(n, d, n, scores, n, v, 3*e, false, out, d)
				vt := make([]float32, d*n)
				for p := 0; p < n; p++ {
					for j := 0; j < d; j++ {
						vt[j*n+p] = v[p*3*e+j]
					}
				}
				wantO := make([]float32, n*d)
				sgemmNTRef(n, d, n, scores, n, vt, n, wantO, d, nil)
				closeTo(t, "PV", out, wantO, n)
				checkGuards(t, "scores", sf)
				checkGuards(t, "out", of)
			}
			checkGuards(t, "qkv", qf)
		}
	})
}

func closeTo(t *testing.T, what string, got, want []float32, k int) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-5*math.Sqrt(float64(k))*(1+math.Abs(float64(want[i])))+1e-6) {
			t.Fatalf("%s: [%d] = %g, oracle %g", what, i, got[i], want[i])
		}
	}
}

// TestSgemmEpilogue: bias, ReLU, GELU and a residual fused into the tile
// loop equal the unfused computation, on every path, in every combination
// (the microkernels add bias and residual themselves on full tiles), on
// full and edge tiles, a k that spans several cache blocks, and a column
// range that starts past the first panel.
func TestSgemmEpilogue(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		forDirectAndPacked(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			shapes := [][3]int{{29, 45, 600}, {12, 32, 16}, {3, 5, 7}, {25, 40, kcBlock + 9}, {24, 96, 33}, {101, 600, 70}}
			for _, act := range []Act{ActNone, ActReLU, ActGELU} {
				for _, withBias := range []bool{false, true} {
					for _, withRes := range []bool{false, true} {
						for _, s := range shapes {
							m, n, k := s[0], s[1], s[2]
							a, _ := guarded(rng, m*k, true)
							b, _ := guarded(rng, n*k, true)
							bias, biasFull := guarded(rng, n, true)
							res, resFull := guarded(rng, m*(n+3), true)
							epi := Epilogue{Act: act}
							if withBias {
								epi.Bias = bias
							}
							if withRes {
								epi.Residual, epi.LdR = res, n+3
							}
							want := make([]float32, m*n)
							sgemmNTRef(m, n, k, a, k, b, k, want, n, epi.Bias)
							for i := 0; i < m; i++ {
								for j := 0; j < n; j++ {
									v := float64(want[i*n+j])
									switch act {
									case ActReLU:
										v = math.Max(v, 0)
									case ActGELU:
										v = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
									}
									want[i*n+j] = float32(v)
									if withRes {
										want[i*n+j] += res[i*(n+3)+j]
									}
								}
							}
							name := fmt.Sprintf("act %d bias %v res %v m%d n%d k%d", act, withBias, withRes, m, n, k)
							pb := PackBT(n, k, b, k)
							c, cf := guarded(rng, m*n, false)
							SgemmPackedEpi(m, a, k, pb, c, n, epi, 0, n)
							checkGuards(t, "C", cf)
							checkGuards(t, "bias", biasFull)
							checkGuards(t, "residual", resFull)
							closeTo(t, name, c, want, k)
							// The columns past the first panel alone: bias and
							// residual are indexed by absolute column.
							if j0 := pb.PanelWidth(); j0 < n {
								c2, cf2 := guarded(rng, m*n, false)
								SgemmPackedEpi(m, a, k, pb, c2, n, epi, j0, n)
								checkGuards(t, "C", cf2)
								for i := 0; i < m; i++ {
									closeTo(t, name+" from column "+fmt.Sprint(j0), c2[i*n+j0:i*n+n], want[i*n+j0:i*n+n], k)
								}
							}
						}
					}
				}
			}
		})
	})
}

// forDirectAndPacked runs f with row-major A read in place where the
// GEMM would (narrow products) and again with A always packed.
func forDirectAndPacked(t *testing.T, f func(t *testing.T)) {
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			prev := allowDirect
			allowDirect = direct
			defer func() { allowDirect = prev }()
			f(t)
		})
	}
}

// TestPrefetchSliceCoversPanel: the slices prefetchSlice hands the row
// tiles of a panel (each kb steps of its step, one step's width of nr
// values at a time) together cover the whole next panel, and each starts
// inside it.
func TestPrefetchSliceCoversPanel(t *testing.T) {
	for _, nr := range []int{16, 32} {
		for _, kb := range []int{1, 7, 64, 768, 1024} {
			for tiles := 1; tiles <= 20; tiles++ {
				next := make([]float32, nr*kb)
				covered := make([]bool, len(next)*4/64+1) // 64-byte lines
				for tl := 0; tl < tiles; tl++ {
					p, step := prefetchSlice(next, nr, kb, tl, tiles)
					if p == nil {
						continue
					}
					if step%8 != 0 || step <= 0 {
						t.Fatalf("nr %d kb %d tiles %d: step %d", nr, kb, tiles, step)
					}
					start := -1
					for i := range next {
						if &next[i] == p {
							start = i * 4
						}
					}
					if start < 0 {
						t.Fatalf("nr %d kb %d tiles %d: tile %d starts outside the panel", nr, kb, tiles, tl)
					}
					for s := 0; s < kb; s++ {
						for d := 0; d < 4*nr; d += 64 {
							if line := (start + s*step + d) / 64; line < len(covered) {
								covered[line] = true
							}
						}
					}
				}
				for line := 0; line < len(next)*4/64; line++ {
					if !covered[line] {
						t.Fatalf("nr %d kb %d tiles %d: line %d of the panel is never prefetched", nr, kb, tiles, line)
					}
				}
			}
		}
	}
}

// TestPrefetchSpreadCoversRegion: the slices prefetchSpread deals out to
// calls of kb steps each (one 64-byte line at pf per step, the narrowest
// window of the kernels) cover every line of the region by the last call,
// and each starts inside it.
func TestPrefetchSpreadCoversRegion(t *testing.T) {
	for _, group := range []int{6, 24, 25} {
		for _, k := range []int{1, 9, 64, 300, 1024, 2048} {
			for _, calls := range []int{1, 2, 3, 14, 40} {
				region := make([]float32, group*k)
				kb := k
				s := newPrefetchSpread(region, calls*kb)
				covered := make([]bool, (len(region)*4+63)/64)
				if s.step > 64 || calls*kb < len(covered) {
					continue // fewer steps than lines: not a region the row groups pass
				}
				base := 0
				for c := 0; c < calls; c++ {
					p, step := s.next(kb)
					if p == nil {
						break
					}
					start := -1
					for i := range region {
						if &region[i] == p {
							start = i * 4
							break
						}
					}
					if start < 0 {
						t.Fatalf("group %d k %d calls %d: call %d starts outside the region", group, k, calls, c)
					}
					if start < base {
						t.Fatalf("group %d k %d calls %d: call %d goes back to byte %d", group, k, calls, c, start)
					}
					base = start
					for st := 0; st < kb; st++ {
						if line := (start + st*step) / 64; line < len(covered) {
							covered[line] = true
						}
					}
				}
				for line, ok := range covered {
					if !ok {
						t.Fatalf("group %d k %d calls %d: line %d of %d never prefetched", group, k, calls, line, len(covered))
					}
				}
			}
		}
	}
}

// TestShortKernelsWriteTheirRows runs each short kernel (microKernel.short),
// packed and in place, on one tile whose A has finite rows past the
// kernel's: it must compute its rows (bias and residual added) and leave
// C's next rows as they were. Balanced tiles run the kernels straight on
// C, where a row too many would overwrite the next tile's first row (or
// run past C's end with the last tile).
func TestShortKernelsWriteTheirRows(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		mk, ok := microKernelFor(active)
		if !ok || len(mk.short) == 0 {
			t.Skip("no short kernels on this path")
		}
		rng := rand.New(rand.NewPCG(21, 22))
		mr, nr, kc := mk.mr, mk.nr, 37
		lda, ldc, ldr := kc+5, nr+3, nr+7
		a, _ := guarded(rng, mr*lda, true)
		packed := make([]float32, mr*kc)
		for r := 0; r < mr; r++ {
			for p := 0; p < kc; p++ {
				packed[p*mr+r] = a[r*lda+p]
			}
		}
		b, _ := guarded(rng, kc*nr, true)
		bias, _ := guarded(rng, nr, true)
		res, _ := guarded(rng, mr*ldr, true)
		const untouched = 7
		for _, sk := range mk.short {
			for _, inPlace := range []bool{false, true} {
				c := make([]float32, mr*ldc)
				for i := range c {
					c[i] = untouched
				}
				if inPlace {
					sk.direct(kc, &a[0], lda, &b[0], &c[0], ldc, 0, &bias[0], &res[0], ldr, nil, 0)
				} else {
					sk.fn(kc, &packed[0], &b[0], &c[0], ldc, 0, &bias[0], &res[0], ldr, nil, 0)
				}
				for r := 0; r < mr; r++ {
					for j := 0; j < nr; j++ {
						want := float32(untouched)
						if r < sk.rows {
							var sum float64
							for p := 0; p < kc; p++ {
								sum += float64(a[r*lda+p]) * float64(b[p*nr+j])
							}
							want = float32(sum) + bias[j] + res[r*ldr+j]
						}
						if got := c[r*ldc+j]; math.Abs(float64(got-want)) > 1e-4 {
							t.Fatalf("%d-row kernel, in place %v: C[%d, %d] = %g, want %g", sk.rows, inPlace, r, j, got, want)
						}
					}
				}
			}
		}
	})
}
