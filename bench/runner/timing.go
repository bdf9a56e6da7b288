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
	"vitbench/bench/contention"
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

// InputSynthesizer is a Spec with inputs the generator's uniform values
// cannot be (CLIP's token ids): SynthInput returns such an input for seed,
// or nil for the generator's default.
type InputSynthesizer interface {
	SynthInput(name string, seed uint64) []float32
}

// SynthData returns a data source for Prepare that generates every input
// and weight with the deterministic generator and the default roles (a
// Spec's own inputs where it is an InputSynthesizer).
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
		if in, ok := spec.(InputSynthesizer); ok && group == "inputs" {
			if v := in.SynthInput(name, seed); v != nil {
				return v, nil
			}
		}
		p := synth.DefaultParams(name, sh, group == "inputs")
		return synth.Generate(seed, name, p, int(sh.Elems())), nil
	}
}

// Timing is what BenchTiming measured: per sample the backend clock and host end-to-end
// time in ns per run (each at least 1 ns, so that every sample is a positive time) and the
// number of runs averaged into it, and the allocator's peak bytes over the case.
type Timing struct {
	KernelNs, E2ENs []float64
	Runs            []int
	Peak            int64
	// Load is the CPU time other processes took while the samples were timed.
	Load contention.Load
}

// Bench times spec on b and returns BenchTiming's samples and peak bytes without the run
// counts.
func Bench(b bench.Backend, spec bench.Spec, dt bench.DType, opt BenchOptions) (kernelNs, e2eNs []float64, peak int64, err error) {
	t, err := BenchTiming(b, spec, dt, opt)
	return t.KernelNs, t.E2ENs, t.Peak, err
}

// BenchTiming times spec on b: opt.Warmup discarded runs, then opt.Count samples, each the
// mean of the runs that together last at least opt.MinSampleTime (one run when 0). A spec
// over the memory budget is refused before anything is allocated; a closed opt.Cancel stops
// it with ErrInterrupted. The samples are one contention window: Load says how busy
// other processes kept the machine meanwhile.
func BenchTiming(b bench.Backend, spec bench.Spec, dt bench.DType, opt BenchOptions) (Timing, error) {
	var out Timing
	if opt.Count <= 0 {
		opt.Count = 10
	}
	s, err := NewSampler(b, spec, dt, opt)
	if err != nil {
		return Timing{}, err
	}
	defer s.Close()
	window := contention.Start()
	for len(out.KernelNs) < opt.Count {
		k, e, reps, err := s.Sample()
		if err != nil {
			return Timing{}, err
		}
		out.KernelNs = append(out.KernelNs, k)
		out.E2ENs = append(out.E2ENs, e)
		out.Runs = append(out.Runs, reps)
	}
	out.Load = window.Stop()
	out.Peak = s.Peak()
	return out, nil
}

// Sampler is one case prepared on a backend and warmed up, timed one sample at a time, so
// that a caller can interleave its samples with another runtime's (vitbench pair).
type Sampler struct {
	b    bench.Backend
	prog *Program
	opt  BenchOptions
	base int64 // the backend's allocated bytes before the case
}

// NewSampler checks spec against the memory budget (nothing is allocated when it is over),
// prepares it on b with opt.Data (the generator's data when nil) and runs opt.Warmup
// discarded runs. Close releases it.
func NewSampler(b bench.Backend, spec bench.Spec, dt bench.DType, opt BenchOptions) (*Sampler, error) {
	if err := CheckBudget(cmp.Or(opt.CaseName, spec.Op()), spec, workersOf(b), opt.MaxBytes); err != nil {
		return nil, err
	}
	b.ResetPeak()
	s := &Sampler{b: b, opt: opt, base: b.Memory().Current}
	data := opt.Data
	if data == nil {
		data = SynthData(spec, opt.Seed)
	}
	prog, err := PrepareCancel(b, spec, dt, data, opt.Cancel)
	if err != nil {
		return nil, err
	}
	s.prog = prog
	for i := 0; i < opt.Warmup; i++ {
		if _, err := b.Time(prog.Run); err != nil {
			prog.Close()
			return nil, err
		}
	}
	return s, nil
}

// Sample times one sample: runs of the program until they together last at least
// opt.MinSampleTime (one run when 0), returning the mean backend-clock and end-to-end ns
// per run (each at least 1) and the number of runs. A closed opt.Cancel stops it between
// two runs with ErrInterrupted.
func (s *Sampler) Sample() (kernelNs, e2eNs float64, runs int, err error) {
	var k, e time.Duration
	for runs == 0 || e < s.opt.MinSampleTime {
		if interrupted(s.opt.Cancel) {
			return 0, 0, 0, ErrInterrupted
		}
		t, err := s.b.Time(s.prog.Run)
		if err != nil {
			return 0, 0, 0, err
		}
		k += t.Kernel
		e += t.EndToEnd
		runs++
	}
	return max(1, float64(k.Nanoseconds())/float64(runs)), max(1, float64(e.Nanoseconds())/float64(runs)), runs, nil
}

// Run runs the program once, untimed: after another runtime's sample, such runs bring
// the case's weights back into the caches and the CPUs back to speed before the next
// sample (vitbench pair decides how many).
func (s *Sampler) Run() error {
	if interrupted(s.opt.Cancel) {
		return ErrInterrupted
	}
	_, err := s.b.Time(s.prog.Run)
	return err
}

// Peak is the most bytes the backend's allocator held for the case so far, beyond what it
// held before NewSampler.
func (s *Sampler) Peak() int64 { return s.b.Memory().Peak - s.base }

// Close releases the prepared program.
func (s *Sampler) Close() { s.prog.Close() }

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

// BenchRow times spec (BenchTiming) and packages the result as a results row, with the
// number of runs averaged into each sample, the foreign CPU load while it was timed, the
// case's parameter count and, when its first
// input is an image batch [B, C, H, W], the image size.
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
	t, err := BenchTiming(b, spec, dt, opt)
	if err != nil {
		return results.BenchRow{}, err
	}
	row = results.NewBenchRow(caseName, b.Name(), batch, threads, string(dt), spec.MACs(), spec.Bytes(), t.Peak, PeakRSS(), t.KernelNs, t.E2ENs)
	row.Runs = t.Runs
	row.Load = &results.RowLoad{Foreign: t.Load.Foreign, Contended: t.Load.Contended,
		RoundTripNs: t.Load.RoundTripNs(), CoresMoved: t.Load.CoresMoved()}
	DescribeRow(&row, spec)
	return row, nil
}

// DescribeRow sets what row says about its case beyond the timing: spec's parameter count
// and, when its first input is an image batch [B, C, H, W], the image size.
func DescribeRow(row *results.BenchRow, spec bench.Spec) {
	row.Params = spec.Params()
	if in := spec.Inputs(); len(in) > 0 && len(in[0].Shape) == 4 {
		row.ImgH, row.ImgW = int(in[0].Shape[2]), int(in[0].Shape[3])
	}
}
