//go:build !purego && amd64

package kern

import (
	"fmt"
	"testing"
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
