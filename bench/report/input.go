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

// CaseInfo describes a case independently of any backend: what it computes and its size.
// MACs and Bytes are per image for networks (batch 1).
type CaseInfo struct {
	Name, Kind, Op string
	Params         int64 // parameters (networks)
	MACs, Bytes    int64
	ImgSize        string // e.g. "224"
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
	Title         string
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
