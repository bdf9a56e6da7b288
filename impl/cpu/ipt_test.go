package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// TestPixelShuffleMatchesLoop: on every ISA path, for factors 2 to 4 and
// widths below, at and past the vector width, pixel_shuffle equals
// PyTorch's definition out[b, c, oy, ox] = x[b, c·r² + (oy mod r)·r +
// (ox mod r), oy / r, ox / r], bit for bit (it only moves values).
func TestPixelShuffleMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	forEachPath(t, func(t *testing.T) {
		for _, r := range []int{2, 3, 4} {
			for _, w := range []int{5, 16, 37} {
				n := ops.PixelShuffle{Batch: 2, Chans: 3, Height: 4, Width: w, R: r}
				x := randSlice(rng, n.Batch*n.Chans*r*r*n.Height*w, -1, 1)
				be := New(2)
				in := []*tensor{be.testTensor(t, bench.Shape{n.Batch, n.Chans * r * r, n.Height, w}, x)}
				out := []*tensor{be.testTensor(t, bench.Shape{n.Batch, n.Chans, n.Height * r, w * r}, nil)}
				if err := be.pixelShuffle(n, in, out); err != nil {
					t.Fatal(err)
				}
				oh, ow := n.Height*r, w*r
				for i, got := range out[0].data {
					b, c, oy, ox := i/(n.Chans*oh*ow), i/(oh*ow)%n.Chans, i/ow%oh, i%ow
					want := x[((b*n.Chans*r*r+c*r*r+oy%r*r+ox%r)*n.Height+oy/r)*w+ox/r]
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%s: out[%d, %d, %d, %d] = %v, want %v", fmt.Sprintf("r %d, width %d", r, w), b, c, oy, ox, got, want)
					}
				}
			}
		}
	})
}
