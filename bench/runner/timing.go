package runner

import (
	"cmp"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"vitbench/bench"
	"vitbench/bench/results"
	"vitbench/bench/synth"
)

// BenchOptions configure timing runs.
type BenchOptions struct {
	// Count is the number of timed samples (at least 10 is the design's
	// floor for a median with an interval).
	Count int
	// Warmup runs precede the samples and are discarded.
	Warmup int
	// MinSampleTime: a sample repeats the graph until it has run this long,
	// and records the mean; 0 means one run per sample.
	MinSampleTime time.Duration
	// Seed drives the synthesized inputs and weights.
	Seed uint64
	// Data, when set, supplies inputs and weights instead of the generator
	// (NPZWeights: a real checkpoint).
	Data func(group, name string) ([]float32, error)
	// MaxBytes is the memory budget of the case (0: DefaultMaxBytes); a case that
	// needs more is refused with a *BudgetError before anything is allocated.
	MaxBytes int64
	// CaseName names the case in that error ("" : the op kind).
	CaseName string
	// Cancel, when closed (a signal), stops the timing between two runs or two nodes
	// with ErrInterrupted.
	Cancel <-chan struct{}
}

// SynthData returns a data source for Prepare that generates every input
// and weight with the deterministic generator and the default roles.
func SynthData(spec bench.Spec, seed uint64) func(group, name string) ([]float32, error) {
	shapes := map[string]bench.Shape{}
	for _, a := range spec.Inputs() {
		shapes["inputs/"+a.Name] = a.Shape
	}
	for _, a := range spec.Weights() {
		shapes["weights/"+a.Name] = a.Shape
	}
	return func(group, name string) ([]float32, error) {
		sh, ok := shapes[group+"/"+name]
		if !ok {
			return nil, fmt.Errorf("no %s array %q", group, name)
		}
		p := synth.DefaultParams(name, sh, group == "inputs")
		return synth.Generate(seed, name, p, int(sh.Elems())), nil
	}
}

// Bench times spec on b. It returns the samples (backend clock and host
// end-to-end, in ns per run; at least 1 ns, so that every sample is a
// positive time) and the allocator's peak bytes. A spec over the memory
// budget is refused before anything is allocated; a closed opt.Cancel
// stops it with ErrInterrupted.
func Bench(b bench.Backend, spec bench.Spec, dt bench.DType, opt BenchOptions) (kernelNs, e2eNs []float64, peak int64, err error) {
	if opt.Count <= 0 {
		opt.Count = 10
	}
	if err := CheckBudget(cmp.Or(opt.CaseName, spec.Op()), spec, workersOf(b), opt.MaxBytes); err != nil {
		return nil, nil, 0, err
	}
	b.ResetPeak()
	base := b.Memory().Current
	data := opt.Data
	if data == nil {
		data = SynthData(spec, opt.Seed)
	}
	prog, err := PrepareCancel(b, spec, dt, data, opt.Cancel)
	if err != nil {
		return nil, nil, 0, err
	}
	defer prog.Close()
	for i := 0; i < opt.Warmup; i++ {
		if _, err := b.Time(prog.Run); err != nil {
			return nil, nil, 0, err
		}
	}
	for len(kernelNs) < opt.Count {
		reps := 0
		var k, e time.Duration
		for reps == 0 || e < opt.MinSampleTime {
			if interrupted(opt.Cancel) {
				return nil, nil, 0, ErrInterrupted
			}
			t, err := b.Time(prog.Run)
			if err != nil {
				return nil, nil, 0, err
			}
			k += t.Kernel
			e += t.EndToEnd
			reps++
		}
		kernelNs = append(kernelNs, max(1, float64(k.Nanoseconds())/float64(reps)))
		e2eNs = append(e2eNs, max(1, float64(e.Nanoseconds())/float64(reps)))
	}
	return kernelNs, e2eNs, b.Memory().Peak - base, nil
}

// ResetPeakRSS returns the memory earlier cases freed to the operating
// system (a garbage collection and a scavenge), then asks Linux to restart
// the process's peak resident set measurement at the current RSS; it
// reports whether that worked. Without the first step the peak would
// start from whatever the largest earlier case left resident.
func ResetPeakRSS() bool {
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// PeakRSS returns the process's peak resident set size in bytes (VmHWM),
// or 0 when unknown.
func PeakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// BenchRow times spec and packages the result as a results row.
//
// A panic while the case runs (a backend bug) is returned as an error, so
// that the remaining cases still run, as CheckFixture does.
func BenchRow(b bench.Backend, caseName string, spec bench.Spec, dt bench.DType, batch, threads int, opt BenchOptions) (row results.BenchRow, err error) {
	defer func() {
		if r := recover(); r != nil {
			row, err = results.BenchRow{}, fmt.Errorf("internal error: %v", r)
		}
	}()
	if opt.CaseName == "" {
		opt.CaseName = caseName
	}
	ResetPeakRSS()
	k, e, peak, err := Bench(b, spec, dt, opt)
	if err != nil {
		return results.BenchRow{}, err
	}
	return results.NewBenchRow(caseName, b.Name(), batch, threads, string(dt), spec.MACs(), spec.Bytes(), peak, PeakRSS(), k, e), nil
}
