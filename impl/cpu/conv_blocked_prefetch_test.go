package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/impl/cpu/internal/kern"
)

// TestWeightPrefetch: the spans a task's calls prefetch walk the runs in
// order (one group's weight, or a batch's run per tap) in whole lines
// (a run's last span may be shorter), never across two runs, and cover
// them all: within the calls when each run takes a whole number of calls'
// shares, or with one run; empty after that.
func TestWeightPrefetch(t *testing.T) {
	for _, c := range []struct{ base, piece, stride, pieces, calls int }{
		{0, 1 << 16, 0, 1, 9}, {4096, 147456, 0, 1, 72}, {16, 40, 0, 1, 3}, {0, 7, 0, 1, 5}, {32, 1 << 14, 0, 1, 1},
		{100, 8192, 32768, 9, 9}, {0, 8192, 8192 * 4, 9, 18}, {64, 8192, 32768, 9, 4}, {0, 0, 0, 1, 4}, {0, 64, 0, 1, 0},
	} {
		p := newWeightPrefetch(c.base, c.piece, c.stride, c.pieces, c.calls)
		run, at, spans := 0, 0, 0
		for call := 0; ; call++ {
			lo, hi := p.next()
			if lo == hi {
				break
			}
			spans++
			if at == c.piece {
				run, at = run+1, 0
			}
			want := c.base + run*c.stride + at
			if run >= c.pieces || lo != want || hi-lo > c.piece-at || (hi-lo)%16 != 0 && hi-lo != c.piece-at {
				t.Fatalf("%+v: call %d prefetches [%d, %d), want whole lines from %d within run %d", c, call, lo, hi, want, run)
			}
			at += hi - lo
		}
		if c.calls > 0 && c.piece > 0 && (run != c.pieces-1 || at != c.piece) {
			t.Errorf("%+v: covered up to run %d, %d floats", c, run, at)
		}
		if (c.pieces == 1 || c.calls%c.pieces == 0) && spans > c.calls {
			t.Errorf("%+v: %d spans for %d calls", c, spans, c.calls)
		}
	}
}

// TestBlockedNextGroup: for every worker's range of tasks, group-major
// with several parts a group and pixel-major, each run of one group's
// tasks names the group of the task after it, and its tasks take the
// shares 0 … run-1 of that group's weight in order; the last run names
// none.
func TestBlockedNextGroup(t *testing.T) {
	for _, bc := range []blockedCase{
		{1, 256, 256, 28, 28, 3, 1, 1, 1, false, true}, // 2.4 MB of weight: group-major
		{1, 64, 256, 56, 56, 1, 1, 0, 1, true, true},   // 64 KiB: pixel-major
	} {
		c := bc.conv()
		bw := blockedConvWeight(c, make([]float32, c.OutChans*c.InChans*c.KernelH*c.KernelW), make([]float32, c.OutChans))
		p := bw.planFor(c, 2)
		groups, parts := len(bw.starts)-1, len(p.partStart)-1
		n := groups * parts
		if !p.pixelMajor && parts < 2 {
			t.Fatalf("%+v: %d parts, want a group-major plan with several", bc, parts)
		}
		for _, r := range [][2]int{{0, n}, {0, n / 2}, {n / 2, n}, {1, n - 1}, {3, 4}} {
			lo, hi := r[0], r[1]
			for task := lo; task < hi; {
				grp, _ := p.task(task, groups)
				end := task
				for end < hi {
					if g, _ := p.task(end, groups); g != grp {
						break
					}
					end++
				}
				want := -1
				if end < hi {
					want, _ = p.task(end, groups)
				}
				for k := 0; task+k < end; k++ {
					g, kk, run := p.nextGroup(task+k, lo, hi, groups)
					if g != want || (want >= 0 && (kk != k || run != end-task)) {
						t.Fatalf("%+v tasks [%d, %d): nextGroup(%d) = %d, %d, %d; want %d, %d, %d",
							bc, lo, hi, task+k, g, kk, run, want, k, end-task)
					}
				}
				task = end
			}
		}
	}
}

// TestConvBlockedPrefetchSameBits: the blocked convolutions (tiles and
// blocked Winograd, 1×1 in one and in several input batches) give the
// same bits with and without the weight prefetch, which only moves
// memory into the cache.
func TestConvBlockedPrefetchSameBits(t *testing.T) {
	if kern.Active() != kern.ISAAVX512 {
		t.Skip("the blocked convolutions and their prefetch run on the AVX-512 path")
	}
	defer func(v bool) { prefetchWeights = v }(prefetchWeights)
	rng := rand.New(rand.NewPCG(5, 9))
	for _, bc := range []blockedCase{
		{1, 64, 128, 14, 14, 3, 1, 1, 1, true, true},  // blocked Winograd
		{1, 128, 256, 7, 9, 3, 1, 1, 1, false, true},  // 3×3 tiles, group-major
		{2, 1040, 128, 5, 6, 1, 1, 0, 1, false, true}, // 1×1 in input batches
		{1, 272, 80, 11, 13, 3, 2, 1, 1, true, true},  // 3×3 in input batches (the first group), stride 2
		{1, 64, 256, 12, 12, 1, 1, 0, 1, true, false}, // 1×1, pixel-major, in place
		{1, 256, 512, 8, 8, 1, 2, 0, 1, false, false}, // 1×1 at stride 2
	} {
		c := bc.conv()
		seed := rng.Uint64()
		var outs [2][]float32
		for i, on := range []bool{false, true} {
			prefetchWeights = on
			be := New(2)
			_, ins, outShape := blockedInputs(t, be, rand.New(rand.NewPCG(seed, 3)), c)
			out := be.testTensor(t, outShape, nil)
			if err := be.Enqueue(c, ins, []bench.Tensor{out}); err != nil {
				t.Fatal(err)
			}
			outs[i] = make([]float32, len(out.data))
			if err := be.Download(out, outs[i]); err != nil {
				t.Fatal(err)
			}
		}
		for i := range outs[0] {
			if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
				t.Fatalf("%+v: output %d is %v with the prefetch, %v without", bc, i, outs[1][i], outs[0][i])
			}
		}
	}
}

// TestConvBlockedWindowBatches runs a 3×3 convolution at stride 2 (so
// not Winograd) whose first group's weight takes its input blocks in
// batches (windowBatchBlocks: 8, 8 and 1 of 17 blocks; the last group,
// one output block, in one pass, as the bf16 tiles' groups), with
// BatchNorm, the residual and ReLU, on every path against the float64
// loop. Its inputs are positive, so that the 2448-term sums do not cancel
// below the comparison's tolerance.
func TestConvBlockedWindowBatches(t *testing.T) {
	c := blockedCase{1, 272, 80, 11, 13, 3, 2, 1, 1, true, true}.conv()
	if got := blockedBatch(c, kern.ConvBlockedMaxBlocks, false); got != windowBatchBlocks {
		t.Fatalf("blockedBatch = %d input blocks, want %d", got, windowBatchBlocks)
	}
	cib := c.InChans / kern.BlockLanes
	if got := blockedBatch(c, 1, false); got != cib {
		t.Fatalf("blockedBatch of one output block = %d, want all %d", got, cib)
	}
	if got := blockedBatch(c, kern.ConvBlockedMaxBlocks, true); got != cib {
		t.Fatalf("blockedBatch of bf16 pairs = %d, want all %d", got, cib)
	}
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(8, 21))
		be := New(2)
		shapes, outShape := convShapes(c)
		vals := make([][]float32, len(shapes))
		ins := make([]bench.Tensor, len(shapes))
		for i, s := range shapes {
			lo, hi := float32(0), float32(1)
			if i == 5 { // the BN variance
				lo, hi = 0.5, 2
			}
			vals[i] = randSlice(rng, int(s.Elems()), lo, hi)
			ins[i] = be.testTensor(t, s, vals[i])
		}
		out := be.testTensor(t, outShape, nil)
		if err := be.Enqueue(c, ins, []bench.Tensor{out}); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(out.data))
		if err := be.Download(out, got); err != nil {
			t.Fatal(err)
		}
		checkClose(t, "window batches", got, blockedOracle(c, vals))
	})
}

// TestBlockedNextBatch: the spans a batch's calls prefetch (nextBatch)
// are exactly the weight the worker's next batch reads, tap by tap: the
// same group's next input blocks, after the last batch the next task's
// first, and nothing after the worker's last task.
func TestBlockedNextBatch(t *testing.T) {
	const l = kern.BlockLanes
	for _, bc := range []blockedCase{
		{1, 272, 80, 11, 13, 3, 2, 1, 1, false, true}, // 3×3: batches of 8, 8 and 1
		{1, 1040, 128, 3, 5, 1, 1, 0, 1, false, true}, // 1×1: batches of 16 blocks
	} {
		c := bc.conv()
		bw := blockedConvWeight(c, make([]float32, c.OutChans*c.InChans*c.KernelH*c.KernelW), make([]float32, c.OutChans))
		p := bw.planFor(c, 2)
		groups, parts := len(bw.starts)-1, len(p.partStart)-1
		cib, taps := c.InChans/l, c.KernelH*c.KernelW
		// reads returns the weight floats a group's batch from block cb0 reads.
		reads := func(grp, cb0 int) map[int]bool {
			nb := min(kern.ConvBlockedMaxBlocks, c.OutChans/l-grp*kern.ConvBlockedMaxBlocks)
			nc := min(blockedBatch(c, nb, false), cib-cb0)
			set := map[int]bool{}
			for tap := 0; tap < taps; tap++ {
				at := bw.starts[grp] + tap*cib*l*nb*l + cb0*l*nb*l
				for i := at; i < at+nc*l*nb*l; i++ {
					set[i] = true
				}
			}
			return set
		}
		lo, hi := 0, groups*parts
		for task := lo; task < hi; task++ {
			grp, _ := p.task(task, groups)
			nb := min(kern.ConvBlockedMaxBlocks, c.OutChans/l-grp*kern.ConvBlockedMaxBlocks)
			batch := blockedBatch(c, nb, false)
			for cb0 := 0; cb0 < cib; cb0 += batch {
				cb1 := cb0 + min(batch, cib-cb0)
				var want map[int]bool
				switch {
				case cb1 < cib:
					want = reads(grp, cb1)
				case task+1 < hi:
					g2, _ := p.task(task+1, groups)
					want = reads(g2, 0)
				}
				pf := bw.nextBatch(c, p, task, hi, groups, cb1, 5)
				got := map[int]bool{}
				for {
					a, b := pf.next()
					if a == b {
						break
					}
					for i := a; i < b; i++ {
						got[i] = true
					}
				}
				if len(got) != len(want) {
					t.Fatalf("%+v task %d batch to %d: prefetches %d floats, the next batch reads %d", bc, task, cb1, len(got), len(want))
				}
				for i := range want {
					if !got[i] {
						t.Fatalf("%+v task %d batch to %d: weight float %d read next is not prefetched", bc, task, cb1, i)
					}
				}
			}
		}
	}
}
