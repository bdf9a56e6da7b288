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
// cpu-bf16 instead of cpu, and VITBENCH_PROFILE_PAIRED=1 profiles both,
// one run of each back to back (which goes first alternating), and prints
// each group's fp32 and bf16 medians and their ratio: where cpu-bf16
// gains least, on one machine state. Skipped unless the variable is set.
func TestNodeProfile(t *testing.T) {
	names := os.Getenv("VITBENCH_PROFILE_CASES")
	if names == "" {
		t.Skip("VITBENCH_PROFILE_CASES not set")
	}
	runs, batch := 30, 0
	fmt.Sscan(os.Getenv("VITBENCH_PROFILE_RUNS"), &runs)
	fmt.Sscan(os.Getenv("VITBENCH_PROFILE_BATCH"), &batch)
	backends := []func(int) *Backend{New}
	switch {
	case os.Getenv("VITBENCH_PROFILE_PAIRED") == "1":
		backends = append(backends, NewBF16)
	case os.Getenv("VITBENCH_PROFILE_BF16") == "1":
		backends = []func(int) *Backend{NewBF16}
	}
	if (len(backends) > 1 || os.Getenv("VITBENCH_PROFILE_BF16") == "1") && !kern.HasBF16() {
		t.Skip("cpu-bf16 needs AVX512_BF16")
	}
	// With VITBENCH_PROFILE_CPU set the backends run on this goroutine
	// alone, locked to its thread, and each node is timed by the
	// thread's CPU time: a profile that other processes sharing the
	// machine do not disturb (except through the caches).
	cpuTime := os.Getenv("VITBENCH_PROFILE_CPU") != ""
	clock := func() time.Duration { return time.Duration(time.Now().UnixNano()) }
	threads := 0
	if cpuTime {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		threads, clock = 1, threadCPUTime
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
		progs := make([]*profiledProgram, len(backends))
		for i, nb := range backends {
			progs[i] = newProfiledProgram(t, nb(threads), s)
		}
		for r := 0; r < runs+3; r++ {
			for j := range progs {
				progs[(j+r)%len(progs)].run(t, clock, r >= 3)
			}
		}
		if len(progs) == 1 {
			progs[0].print(name)
		} else {
			printPaired(name, progs[0], progs[1])
		}
		for _, p := range progs {
			p.free()
		}
	}
}

// profiledProgram is one backend's tensors for a case's graph, run node
// by node with each node timed.
type profiledProgram struct {
	be           *Backend
	steps        []bench.Step
	ins, outs    [][]bench.Tensor
	vals         map[string]bench.Tensor
	times        [][]float64 // per node, one time per recorded run
	wholeRuns    []float64   // each recorded run's time, steps and all
	wroteBlocked []bool      // each node's output, as it left it
}

func newProfiledProgram(t *testing.T, be *Backend, s bench.Spec) *profiledProgram {
	data := runner.SynthData(s, 1)
	g := runner.GraphFor(be, s, bench.Float32)
	p := &profiledProgram{be: be, steps: g.Steps, vals: map[string]bench.Tensor{}}
	alloc := func(group string, as []bench.ArraySpec) {
		for _, a := range as {
			x, err := be.Alloc(a.Shape, bench.Float32)
			if err != nil {
				t.Fatal(err)
			}
			p.vals[a.Name] = x
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
	alloc("", g.Temps)
	alloc("", s.Outputs())
	n := len(p.steps)
	p.ins, p.outs = make([][]bench.Tensor, n), make([][]bench.Tensor, n)
	for i, st := range p.steps {
		for _, v := range st.In {
			p.ins[i] = append(p.ins[i], p.vals[v])
		}
		for _, v := range st.Out {
			p.outs[i] = append(p.outs[i], p.vals[v])
		}
	}
	p.times, p.wroteBlocked = make([][]float64, n), make([]bool, n)
	return p
}

// run runs every node once, recording the times when record is set.
func (p *profiledProgram) run(t *testing.T, clock func() time.Duration, record bool) {
	run0 := clock()
	for i, st := range p.steps {
		t0 := clock()
		if err := p.be.Enqueue(st.Node, p.ins[i], p.outs[i]); err != nil {
			t.Fatal(err)
		}
		if len(p.outs[i]) > 0 {
			p.wroteBlocked[i] = p.outs[i][0].(*tensor).blocked
		}
		if record {
			p.times[i] = append(p.times[i], (clock() - t0).Seconds())
		}
	}
	if record {
		p.wholeRuns = append(p.wholeRuns, (clock() - run0).Seconds())
	}
}

func (p *profiledProgram) free() {
	for _, x := range p.vals {
		p.be.Free(x)
	}
}

// profileGroup is the nodes of one kind and shape: their count, the sum
// of their median times and their multiply-adds (convolutions only).
type profileGroup struct {
	key    string
	n      int
	median float64
	macs   float64
}

// groups sums the node medians by kind and shape, largest first, and
// returns them with their total and each node's group.
func (p *profiledProgram) groups() ([]*profileGroup, []*profileGroup, float64) {
	byKey := map[string]*profileGroup{}
	of := make([]*profileGroup, len(p.steps))
	total := 0.0
	for i, st := range p.steps {
		m := median(p.times[i])
		total += m
		key := fmt.Sprintf("%s %+v", st.Node.OpName(), st.Node)
		var macs float64
		if c, ok := st.Node.(ops.Conv2d); ok {
			path := "windows"
			switch {
			case p.wroteBlocked[i]:
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
			macs = float64(c.OutH()*c.OutW()*c.OutChans*c.Cols()) * float64(c.Batch)
		}
		if byKey[key] == nil {
			byKey[key] = &profileGroup{key: key}
		}
		g := byKey[key]
		g.n++
		g.median += m
		g.macs += macs
		of[i] = g
	}
	var rows []*profileGroup
	for _, g := range byKey {
		rows = append(rows, g)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].median > rows[j].median })
	return rows, of, total
}

func (p *profiledProgram) print(name string) {
	rows, _, total := p.groups()
	fmt.Printf("%s: %d nodes, sum of medians %.3f ms, median run %.3f ms\n", name, len(p.steps), total*1e3, median(p.wholeRuns)*1e3)
	for _, r := range rows {
		gf := ""
		if r.macs > 0 {
			gf = fmt.Sprintf(" %.0f GFLOP/s", 2*r.macs/r.median/1e9)
		}
		fmt.Printf("%8.3f ms %5.1f%% x%-2d %s%s\n", r.median*1e3, 100*r.median/total, r.n, r.key, gf)
	}
}

// printPaired prints the groups of the fp32 program with the bf16
// program's time for the same nodes beside each, and their ratio (the
// convolutions' paths named are fp32's). The whole-run line gives the
// median of the runs' ratios.
func printPaired(name string, fp32, bf16 *profiledProgram) {
	rows, of, total := fp32.groups()
	bf16Of := map[*profileGroup]float64{}
	total16 := 0.0
	for i := range bf16.steps {
		m := median(bf16.times[i])
		bf16Of[of[i]] += m
		total16 += m
	}
	var ratios []float64
	for i := range fp32.wholeRuns {
		ratios = append(ratios, fp32.wholeRuns[i]/bf16.wholeRuns[i])
	}
	fmt.Printf("%s: %d nodes, fp32/bf16 paired: sums of medians %.3f / %.3f ms (%.2fx), median runs %.3f / %.3f ms, median run ratio %.2fx\n",
		name, len(fp32.steps), total*1e3, total16*1e3, total/total16, median(fp32.wholeRuns)*1e3, median(bf16.wholeRuns)*1e3, median(ratios))
	for _, r := range rows {
		b := bf16Of[r]
		fmt.Printf("%8.3f ms %8.3f ms %5.2fx %5.1f%% of bf16  x%-2d %s\n", r.median*1e3, b*1e3, r.median/b, 100*b/total16, r.n, r.key)
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
