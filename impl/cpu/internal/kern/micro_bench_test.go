//go:build !purego && amd64

package kern

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkMicroKernel times the register-blocked kernels alone on panels
// that stay in L1: the ceiling the packed GEMM can approach.
func BenchmarkMicroKernel(b *testing.B) {
	for _, mk := range []struct {
		name string
		mk   microKernel
		isa  ISA
	}{{"avx512-12x32", gemmAVX512, ISAAVX512}, {"avx2-6x16", gemmAVX2, ISAAVX2}} {
		ok := false
		for _, s := range Supported() {
			ok = ok || s == mk.isa
		}
		if !ok {
			continue
		}
		kc := 256
		a := make([]float32, mk.mk.mr*kc)
		bb := make([]float32, mk.mk.nr*kc)
		c := make([]float32, mk.mk.mr*mk.mk.nr)
		b.Run(fmt.Sprintf("%s/kc=%d", mk.name, kc), func(b *testing.B) {
			for b.Loop() {
				mk.mk.fn(kc, &a[0], &bb[0], &c[0], mk.mk.nr, 1, nil, nil, 0, nil, 0)
			}
			b.ReportMetric(2*float64(mk.mk.mr*mk.mk.nr*kc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func BenchmarkPack(b *testing.B) {
	n, k := 768, 768
	src := make([]float32, n*k)
	pb := make([]float32, n*k)
	b.Run("B-trans-768x256", func(b *testing.B) {
		for b.Loop() {
			packB(pb, src, k, true, n, 32, 0, 256)
		}
	})
	b.Run("A-96x256", func(b *testing.B) {
		for b.Loop() {
			packA(pb, src, k, 0, 96, 12, 0, 256)
		}
	})
}

// BenchmarkBalancedTiles runs row counts that twelve does not divide (77
// text tokens, 89 and 100 rows, 197 image tokens) in balanced tiles
// (rowTile) and in full tiles and a tail, alternating call by call on
// one thread, and reports the ratio of the medians (speedup > 1: balanced
// faster). The products are ViT-B's and DeiT-Ti's MLP layers split
// between two workers by columns, and a narrow one read in place.
func BenchmarkBalancedTiles(b *testing.B) {
	if active != ISAAVX512 {
		b.Skip("short kernels are AVX-512 only")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, nk := range [][2]int{{1536, 768}, {384, 3072}, {768, 192}, {64, 197}} {
		n, k := nk[0], nk[1]
		w := make([]float32, n*k)
		for i := range w {
			w[i] = rng.Float32()*2 - 1
		}
		pb := PackBT(n, k, w, k)
		bias := make([]float32, n)
		for _, m := range []int{77, 89, 100, 197} {
			a, c := make([]float32, m*k), make([]float32, m*n)
			for i := range a {
				a[i] = rng.Float32()*2 - 1
			}
			b.Run(fmt.Sprintf("m=%d/n=%d/k=%d", m, n, k), func(b *testing.B) {
				defer func() { allowBalanced = true }()
				var times [2][]float64
				for i := 0; b.Loop(); i++ {
					allowBalanced = i%2 == 0
					t0 := time.Now()
					SgemmPackedEpi(m, a, k, pb, c, n, Epilogue{Bias: bias}, 0, n)
					times[i%2] = append(times[i%2], time.Since(t0).Seconds())
				}
				if len(times[1]) > 0 {
					b.ReportMetric(median(times[1])/median(times[0]), "speedup")
				}
			})
		}
	}
}
