package cpu

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/ops"
	"vitbench/bench/runner"
	"vitbench/impl/cpu/internal/kern"
)

// TestNodeProfile prints the time of every node of the cases named in
// VITBENCH_PROFILE_CASES (comma-separated), the median over
// VITBENCH_PROFILE_RUNS whole runs (default 30), grouped by node: a
// per-layer profile for choosing what to speed up. VITBENCH_PROFILE_BATCH
// sets the batch (default: the case's), VITBENCH_PROFILE_BF16=1 profiles
// cpu-bf16 instead of cpu. Skipped unless the variable is set.
func TestNodeProfile(t *testing.T) {
	names := os.Getenv("VITBENCH_PROFILE_CASES")
	if names == "" {
		t.Skip("VITBENCH_PROFILE_CASES not set")
	}
	runs, batch := 30, 0
	fmt.Sscan(os.Getenv("VITBENCH_PROFILE_RUNS"), &runs)
	fmt.Sscan(os.Getenv("VITBENCH_PROFILE_BATCH"), &batch)
	newBackend := New
	if os.Getenv("VITBENCH_PROFILE_BF16") == "1" {
		if !kern.HasBF16() {
			t.Skip("cpu-bf16 needs AVX512_BF16")
		}
		newBackend = NewBF16
	}
	for _, name := range strings.Split(names, ",") {
		c, ok := cases.Lookup(name)
		if !ok {
			t.Fatalf("no case %s", name)
		}
		s, err := c.Spec(batch)
		if err != nil {
			t.Fatal(err)
		}
		// With VITBENCH_PROFILE_CPU set the backend runs on this goroutine
		// alone, locked to its thread, and each node is timed by the
		// thread's CPU time: a profile that other processes sharing the
		// machine do not disturb (except through the caches).
		cpuTime := os.Getenv("VITBENCH_PROFILE_CPU") != ""
		clock := func() time.Duration { return time.Duration(time.Now().UnixNano()) }
		be := newBackend(0)
		if cpuTime {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			be, clock = newBackend(1), threadCPUTime
		}
		data := runner.SynthData(s, 1)
		vals := map[string]bench.Tensor{}
		alloc := func(group string, as []bench.ArraySpec) {
			for _, a := range as {
				x, err := be.Alloc(a.Shape, bench.Float32)
				if err != nil {
					t.Fatal(err)
				}
				vals[a.Name] = x
				if group != "" {
					host, err := data(group, a.Name)
					if err != nil {
						t.Fatal(err)
					}
					be.Upload(x, host)
				}
			}
		}
		alloc("inputs", s.Inputs())
		alloc("weights", s.Weights())
		alloc("", s.Graph().Temps)
		alloc("", s.Outputs())
		steps := s.Graph().Steps
		ins, outs := make([][]bench.Tensor, len(steps)), make([][]bench.Tensor, len(steps))
		for i, st := range steps {
			for _, v := range st.In {
				ins[i] = append(ins[i], vals[v])
			}
			for _, v := range st.Out {
				outs[i] = append(outs[i], vals[v])
			}
		}
		times := make([][]float64, len(steps))
		wroteBlocked := make([]bool, len(steps)) // the node's output, as it left it
		var wholeRuns []float64                  // each run's time, steps and all
		for r := 0; r < runs+3; r++ {
			run0 := clock()
			for i, st := range steps {
				t0 := clock()
				if err := be.Enqueue(st.Node, ins[i], outs[i]); err != nil {
					t.Fatal(err)
				}
				if len(outs[i]) > 0 {
					wroteBlocked[i] = outs[i][0].(*tensor).blocked
				}
				if r >= 3 {
					times[i] = append(times[i], (clock() - t0).Seconds())
				}
			}
			if r >= 3 {
				wholeRuns = append(wholeRuns, (clock() - run0).Seconds())
			}
		}
		type row struct {
			key    string
			n      int
			median float64
		}
		groups := map[string]*row{}
		macs := map[string]float64{}
		total := 0.0
		for i, st := range steps {
			m := median(times[i])
			total += m
			key := fmt.Sprintf("%s %+v", st.Node.OpName(), st.Node)
			if c, ok := st.Node.(ops.Conv2d); ok {
				path := "windows"
				switch {
				case wroteBlocked[i]:
					path = "blocked"
				case useWinograd(c, false):
					path = "winograd"
				case usePointwise(c, false):
					path = "pointwise"
				case useDirect(c):
					path = "direct"
				}
				key = fmt.Sprintf("conv2d %d→%d %dx%d k%d s%d p%d res=%v %s", c.InChans, c.OutChans, c.Height, c.Width,
					c.KernelH, c.StrideH, c.PadH, c.Residual, path)
				macs[key] += float64(c.OutH()*c.OutW()*c.OutChans*c.Cols()) * float64(c.Batch)
			}
			if groups[key] == nil {
				groups[key] = &row{key: key}
			}
			groups[key].n++
			groups[key].median += m
		}
		var rows []*row
		for _, r := range groups {
			rows = append(rows, r)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].median > rows[j].median })
		fmt.Printf("%s: %d nodes, sum of medians %.3f ms, median run %.3f ms\n", name, len(steps), total*1e3, median(wholeRuns)*1e3)
		for _, r := range rows {
			gf := ""
			if m := macs[r.key]; m > 0 {
				gf = fmt.Sprintf(" %.0f GFLOP/s", 2*m/r.median/1e9)
			}
			fmt.Printf("%8.3f ms %5.1f%% x%-2d %s%s\n", r.median*1e3, 100*r.median/total, r.n, r.key, gf)
		}
		for _, x := range vals {
			be.Free(x)
		}
	}
}

// abNode times node on backend be, alternating variant a and b (set up by
// the set function before each run) for rounds rounds, and returns the
// median times of each.
func abNode(t *testing.T, be *Backend, node bench.Node, shapes []bench.Shape, outShapes []bench.Shape, rounds int, set func(variant int)) (ta, tb float64) {
	var in, out [2][]bench.Tensor
	for v := range 2 {
		for i, s := range shapes {
			x, _ := be.Alloc(s, bench.Float32)
			d := make([]float32, s.Elems())
			for j := range d {
				d[j] = float32((j*7+i*13)%17)/17 - 0.5
			}
			be.Upload(x, d)
			in[v] = append(in[v], x)
		}
		for _, s := range outShapes {
			x, _ := be.Alloc(s, bench.Float32)
			out[v] = append(out[v], x)
		}
	}
	// With VITBENCH_PROFILE_CPU the runs are timed by this thread's CPU
	// time (meaningful for a one-thread backend).
	clock := func() time.Duration { return time.Duration(time.Now().UnixNano()) }
	if os.Getenv("VITBENCH_PROFILE_CPU") != "" {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		clock = threadCPUTime
	}
	var times [2][]float64
	for r := 0; r < rounds+2; r++ {
		for v := range 2 {
			v := (v + r) % 2
			set(v)
			t0 := clock()
			for range 5 {
				if err := be.Enqueue(node, in[v], out[v]); err != nil {
					t.Fatal(err)
				}
			}
			if r >= 2 {
				times[v] = append(times[v], (clock()-t0).Seconds()/5)
			}
		}
	}
	return median(times[0]), median(times[1])
}

// TestConvPathAB prints, for VQGAN's small-map convolutions, the median
// time of the implicit-GEMM (windows) and the direct path, interleaved.
// Skipped unless VITBENCH_PROFILE_AB is set.
func TestConvPathAB(t *testing.T) {
	if os.Getenv("VITBENCH_PROFILE_AB") == "" {
		t.Skip("VITBENCH_PROFILE_AB not set")
	}
	defer func(p string) { convPath = p }(convPath)
	type cv struct{ cin, cout, h, k, s, p int }
	list := []cv{{64, 64, 16, 3, 1, 1}, {32, 64, 16, 3, 1, 1}, {64, 32, 16, 3, 1, 1}, {32, 32, 16, 3, 1, 1},
		{128, 128, 16, 3, 1, 1}, {256, 256, 16, 3, 1, 1}, {512, 512, 16, 3, 1, 1}, {64, 64, 8, 3, 1, 1}, {32, 32, 33, 3, 2, 0},
		{64, 64, 24, 3, 1, 1}, {32, 32, 32, 3, 1, 1}}
	if v := os.Getenv("VITBENCH_PROFILE_AB"); v != "1" {
		list = nil
		for _, f := range strings.Split(v, ";") {
			var c cv
			fmt.Sscanf(f, "%d,%d,%d,%d,%d,%d", &c.cin, &c.cout, &c.h, &c.k, &c.s, &c.p)
			list = append(list, c)
		}
	}
	for _, c := range list {
		conv := ops.Conv2d{Unfold: ops.Unfold{Batch: 1, InChans: c.cin, Height: c.h, Width: c.h, KernelH: c.k, KernelW: c.k,
			StrideH: c.s, StrideW: c.s, PadH: c.p, PadW: c.p, DilationH: 1, DilationW: 1}, OutChans: c.cout, Bias: true}
		be := New(0)
		if os.Getenv("VITBENCH_PROFILE_CPU") != "" {
			be = New(1)
		}
		oh := conv.OutH()
		ta, tb := abNode(t, be, conv, []bench.Shape{{1, c.cin, c.h, c.h}, {c.cout, c.cin, c.k, c.k}, {c.cout}},
			[]bench.Shape{{1, c.cout, oh, oh}}, 40, func(v int) { convPath = []string{"windows", "direct"}[v] })
		fmt.Printf("%+v windows %.1f µs direct %.1f µs  windows/direct %.2f\n", c, ta*1e6, tb*1e6, ta/tb)
	}
}

// TestGemmCPUCeiling prints the single-thread GFLOP/s of a 512³ product
// (kern.Sgemm) by thread CPU time: the ceiling TestNodeProfile's
// VITBENCH_PROFILE_CPU figures compare with. Skipped unless
// VITBENCH_PROFILE_CPU is set.
func TestGemmCPUCeiling(t *testing.T) {
	if os.Getenv("VITBENCH_PROFILE_CPU") == "" {
		t.Skip("VITBENCH_PROFILE_CPU not set")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const n = 512
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%7)/7, float32(i%5)/5
	}
	var best time.Duration = 1 << 62
	for range 20 {
		t0 := threadCPUTime()
		kern.Sgemm(n, n, n, a, n, b, n, false, c, n)
		best = min(best, threadCPUTime()-t0)
	}
	fmt.Printf("Sgemm %d³ single thread: %.0f GFLOP/s (best of 20, thread CPU time)\n", n, 2*n*n*n/best.Seconds()/1e9)
}
