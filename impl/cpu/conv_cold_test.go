package cpu

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// coldSetBytes is how much memory TestConvColdAB rotates each path's
// calls through: far past the L2 of both cores, so that each call's
// buffers come from memory as a network node's do.
const coldSetBytes = 160 << 20

// TestConvColdAB times convolutions as a network's nodes see their data:
// each call takes the input, the residual and the output (and, with
// VITBENCH_PROFILE_COLD_WEIGHTS set, the weight) of its own from sets
// that fill coldSetBytes, so that they come from memory and not from the
// caches, as in TestNodeProfile. A convolution timed over and over on the
// same buffers hides that (docs/cpu-convolution.md, "Channel groups across
// long runs" and "Weights from memory").
//
// VITBENCH_PROFILE_COLD lists the convolutions,
// "cin,cout,size,k,stride,res[,batch[,width]]" separated by ";" (a size×size
// map, or size×width; a k×k kernel, pad k/2, BN folded, ReLU; res 1 adds a
// residual); VITBENCH_PROFILE_COLD_PATHS the VITBENCH_CONV values to
// compare, separated by "|" (default "|direct": the rules' choice against
// the direct path). Each path has a backend and sets of its own; they
// alternate call group by call group, and the medians of 38 groups of four
// calls are printed. With VITBENCH_PROFILE_COLD_INPLACE set, the last
// path's convolutions with a residual write their output over it.
// Skipped unless VITBENCH_PROFILE_COLD is set.
func TestConvColdAB(t *testing.T) {
	list := os.Getenv("VITBENCH_PROFILE_COLD")
	if list == "" {
		t.Skip("VITBENCH_PROFILE_COLD not set")
	}
	paths := strings.Split(os.Getenv("VITBENCH_PROFILE_COLD_PATHS"), "|")
	if len(paths) == 1 && paths[0] == "" {
		paths = []string{"", "direct"}
	}
	coldWeights := os.Getenv("VITBENCH_PROFILE_COLD_WEIGHTS") != ""
	inPlace := os.Getenv("VITBENCH_PROFILE_COLD_INPLACE") != ""
	defer func(p string) { convPath = p }(convPath)
	for _, spec := range strings.Split(list, ";") {
		var cin, cout, size, k, stride, res int
		batch, width := 1, 0
		if n, _ := fmt.Sscanf(spec, "%d,%d,%d,%d,%d,%d,%d,%d", &cin, &cout, &size, &k, &stride, &res, &batch, &width); n < 6 {
			t.Fatalf("VITBENCH_PROFILE_COLD %q: want cin,cout,size,k,stride,res[,batch[,width]]", spec)
		}
		if width == 0 {
			width = size
		}
		conv := ops.Conv2d{Unfold: ops.Unfold{Batch: batch, InChans: cin, Height: size, Width: width, KernelH: k, KernelW: k,
			StrideH: stride, StrideW: stride, PadH: k / 2, PadW: k / 2, DilationH: 1, DilationW: 1}, OutChans: cout,
			BN: true, BNEps: 1e-5, ReLU: true, Residual: res == 1}
		shapes, outShape := convShapes(conv)
		variance := 5 // the BN variance after image, weight, gamma, beta and mean: kept positive
		setBytes := outShape.Elems() * 4
		for _, s := range shapes {
			setBytes += s.Elems() * 4
		}
		sets := int(max(4, coldSetBytes/setBytes))
		type world struct {
			be      *Backend
			in, out [][]bench.Tensor
		}
		worlds := make([]world, len(paths))
		for w := range worlds {
			be := New(0)
			worlds[w].be = be
			for range sets {
				var in []bench.Tensor
				for i, s := range shapes {
					weight := i > 0 && !(conv.Residual && i == len(shapes)-1) // the weight and BN: shared unless cold
					if weight && !coldWeights && len(worlds[w].in) > 0 {
						in = append(in, worlds[w].in[0][i])
						continue
					}
					x, _ := be.Alloc(s, bench.Float32)
					d := make([]float32, s.Elems())
					for j := range d {
						d[j] = float32((j*7+i*13)%17)/17 - 0.5
						if i == variance {
							d[j] = 0.5 + float32(j%5)/10
						}
					}
					be.Upload(x, d)
					in = append(in, x)
				}
				// The image and residual of a blocked path come blocked, as
				// from the convolution before it in a network.
				convPath = paths[w]
				if be.useBlocked(conv, false) {
					be.blockInPlace(in[0].(*tensor))
					if conv.Residual {
						be.blockInPlace(in[len(in)-1].(*tensor))
					}
				}
				o, _ := be.Alloc(outShape, bench.Float32)
				if inPlace && conv.Residual && w == len(paths)-1 {
					o = in[len(in)-1] // the output over its residual, as a program binds it (InPlace)
				}
				worlds[w].in = append(worlds[w].in, in)
				worlds[w].out = append(worlds[w].out, []bench.Tensor{o})
			}
		}
		times := make([][]float64, len(paths))
		next := make([]int, len(paths))
		for r := 0; r < 40; r++ {
			for i := range paths {
				w := (i + r) % len(paths)
				convPath = paths[w]
				t0 := time.Now()
				for range 4 {
					next[w] = (next[w] + 1) % sets
					if err := worlds[w].be.Enqueue(conv, worlds[w].in[next[w]], worlds[w].out[next[w]]); err != nil {
						t.Fatal(err)
					}
				}
				if r >= 2 {
					times[w] = append(times[w], time.Since(t0).Seconds()/4)
				}
			}
		}
		line := spec
		flop := 2 * float64(batch*conv.OutH()*conv.OutW()*cout*cin*k*k)
		for w, p := range paths {
			slices.Sort(times[w])
			m := times[w][len(times[w])/2]
			line += fmt.Sprintf("  [%s] %.3f ms (%.0f GFLOP/s)", p, m*1e3, flop/m/1e9)
		}
		fmt.Println(line)
	}
}
