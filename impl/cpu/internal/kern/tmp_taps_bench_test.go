//go:build !purego && amd64

package kern

import (
	"fmt"
	"testing"
)

func BenchmarkTmpTaps(b *testing.B) {
	// direct-conv-like: C channels, 3x3, padded width wq, block 128
	for _, cfg := range []struct{ m, c, wq, nb int }{{64, 32, 114, 128}, {12, 32, 114, 32}, {96, 64, 58, 128}, {128, 128, 58, 128}} {
		k := cfg.c*9 + 1
		plane := cfg.wq * cfg.wq
		src := make([]float32, cfg.c*plane+plane+1024)
		for i := range src {
			src[i] = float32(i%13) * 0.01
		}
		taps := make([]int, 0, k)
		for ch := 0; ch < cfg.c; ch++ {
			for ky := 0; ky < 3; ky++ {
				for kx := 0; kx < 3; kx++ {
					taps = append(taps, ch*plane+ky*cfg.wq+kx)
				}
			}
		}
		taps = append(taps, cfg.c*plane)
		a := make([]float32, cfg.m*k)
		pa := PackA(cfg.m, k, a, k)
		c := make([]float32, pa.Rows()*cfg.nb)
		b.Run(fmt.Sprintf("m%d_c%d_wq%d_nb%d", cfg.m, cfg.c, cfg.wq, cfg.nb), func(b *testing.B) {
			off := 0
			for b.Loop() {
				SgemmTaps(pa, src[off:], taps, cfg.nb, c, cfg.nb)
				off = (off + cfg.nb) % (cfg.wq * 40)
			}
			b.ReportMetric(2*float64(cfg.m*k*cfg.nb)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func BenchmarkTmpMicroKC(b *testing.B) {
	mk := gemmAVX512
	for _, kc := range []int{32, 64, 128, 256, 512} {
		a := make([]float32, mk.mr*kc)
		bb := make([]float32, mk.nr*kc)
		c := make([]float32, mk.mr*mk.nr)
		b.Run(fmt.Sprintf("kc=%d", kc), func(b *testing.B) {
			for b.Loop() {
				mk.fn(kc, &a[0], &bb[0], &c[0], mk.nr, 1, nil, nil, 0, nil)
			}
			b.ReportMetric(2*float64(mk.mr*mk.nr*kc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
