package report

import "vitbench/bench/results"

// Case kinds, as CaseInfo.Kind and results.CheckRow.Kind spell them.
const (
	KindComponent = "component"
	KindNetwork   = "network"
)

// TorchBackend is the backend name of rows measured by reference/bench_torch.py; they fill
// the PyTorch columns instead of rows of their own.
const TorchBackend = "torch"

// NumPyBackend is the backend name of the NumPy rows reference/bench_torch.py writes for
// plain matrix products (NumPy's BLAS).
const NumPyBackend = "numpy"

// isReference reports whether a backend's rows come from reference/bench_torch.py rather
// than from vitbench.
func isReference(backend string) bool {
	return backend == TorchBackend || backend == NumPyBackend || backend == OrtBackend
}

// CaseInfo describes a case independently of any backend: what it computes and its size.
// MACs and Bytes are per image for networks (batch 1).
type CaseInfo struct {
	Name, Kind, Op string
	Params         int64 // parameters (networks)
	MACs, Bytes    int64
	ImgSize        string // e.g. "224"
	// Top1 says the case's conformance check also compares the top-1 class of every image
	// (a network with a logits output).
	Top1 bool
	// Labels says the case is a detector whose check compares its "labels" output (each
	// detection's class, near ties aligned): the class agreement of a detector.
	Labels bool
}

// Input is everything a report is built from.
type Input struct {
	Bench []results.BenchFile
	Check []results.CheckFile
	// BenchPaths and CheckPaths, when set, name the file each Bench and Check entry was read
	// from (same index); they are listed at the end of the report.
	BenchPaths []string
	CheckPaths []string
	// Cases describes the cases by name; a case missing here counts as a component.
	Cases map[string]CaseInfo
	// PeakGFLOPs is the peak GFLOP/s the "% of peak" column divides by; 0 = unknown.
	PeakGFLOPs float64
	// PeakByBackend overrides PeakGFLOPs for the backends it names (a GPU's peak is not the
	// CPU's); a backend mapped to 0 gets no "% of peak".
	PeakByBackend map[string]float64
	// Roof is the machine's measured ceilings the roofline chart draws (zero = unknown).
	Roof  Roof
	Title string
	// Figures are the charts written beside the report (WriteFigures), shown in the Plots
	// section; FigureNotes say, one line each, which charts were not drawn and why.
	Figures     []FigureRef
	FigureNotes []string
	// Base, when set, is the timing file the A/B section compares the report's own
	// vitbench rows with (BasePath names it). Without it the A/B section compares
	// PyTorch (base) with each vitbench backend on the same machine (head).
	Base     *results.BenchFile
	BasePath string
	// Partial, when set, says why the run the report is built from stopped before it
	// finished (a signal); the report says so at the top, as it does for result files
	// marked partial (results.PartialKey).
	Partial string
}

// Roof holds the ceilings of the roofline chart: the compute peak (GFLOP/s) and the
// memory bandwidth (GB/s) measured on the machine (vitbench peak), at Threads threads.
// They apply to the backends running on the host CPU (every backend but cuda).
type Roof struct {
	GFLOPs, GBps float64
	Threads      int
	// Source says where the figures come from, e.g. "peak.json: avx512 FMA, triad/copy".
	Source string
}

// peak returns the peak GFLOP/s that backend's rows are compared with; 0 = unknown.
func (in Input) peak(backend string) float64 {
	if p, ok := in.PeakByBackend[backend]; ok {
		return p
	}
	return in.PeakGFLOPs
}

// kind returns the case's kind; unknown cases are components.
func (in Input) kind(caseName string) string {
	if c, ok := in.Cases[caseName]; ok && c.Kind != "" {
		return c.Kind
	}
	return KindComponent
}
