package kern

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkTmpSoftmaxShort(b *testing.B) {
	for _, n := range []int{50, 77, 197, 256} {
		for _, pad := range []bool{false, true} {
			ld := n
			if pad {
				ld = (n + 15) / 16 * 16
			}
			rows := 120000 / n
			rng := rand.New(rand.NewPCG(1, 2))
			x, _ := guarded(rng, rows*ld, true)
			x = make([]float32, rows*ld+16)
			for i := range x {
				x[i] = rng.Float32()
			}
			b.Run(fmt.Sprintf("n=%d/ld=%d", n, ld), func(b *testing.B) {
				for b.Loop() {
					Softmax(rows, n, x, ld, x, ld, 0.125)
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(rows*n), "ns/value")
			})
		}
	}
}
