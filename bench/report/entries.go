package report

import (
	"cmp"
	"slices"

	"vitbench/bench/accuracy"
	"vitbench/bench/results"
)

// entry is one bench row with the machine it was measured on.
type entry struct {
	results.BenchRow
	machine string
	file    int // index into Input.Bench
}

// machineName names the machine of a result file: Meta.Machine, else the CPU, else "unknown".
func machineName(m results.Meta) string {
	switch {
	case m.Machine != "":
		return m.Machine
	case m.CPU != "":
		return m.CPU
	}
	return "unknown"
}

// entries flattens all bench rows, sorted by case, backend, dtype, batch, threads, machine.
func (in Input) entries() []entry {
	var es []entry
	for i, f := range in.Bench {
		for _, r := range f.Rows {
			es = append(es, entry{BenchRow: r, machine: machineName(f.Meta), file: i})
		}
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.Case, b.Case), cmp.Compare(a.Backend, b.Backend),
			cmp.Compare(a.DType, b.DType), cmp.Compare(a.Batch, b.Batch),
			cmp.Compare(a.Threads, b.Threads), cmp.Compare(a.machine, b.machine))
	})
	return es
}

// torchFor returns the PyTorch row measured on the same machine for the same case, batch and
// threads; ok is false when there is none. For a reduced-precision backend ("cuda-bf16") only a
// row in that precision will do (torchDType); otherwise the same dtype is preferred, then any.
func torchFor(es []entry, e entry) (t entry, ok bool) {
	want, strict := e.DType, false
	if p := accuracy.Precision(e.Backend); p != "" {
		want, strict = torchDType[p], true
	}
	for _, c := range es {
		if c.Backend == TorchBackend && c.machine == e.machine && c.Case == e.Case && c.Batch == e.Batch && c.Threads == e.Threads {
			if c.DType == want {
				return c, true
			}
			if !ok && !strict {
				t, ok = c, true
			}
		}
	}
	return t, ok
}

// torchDType is the dtype field reference/bench_torch.py --dtype writes for each reduced
// precision a backend name declares.
var torchDType = map[string]string{"tf32": "tf32", "bf16": "bfloat16", "fp16": "float16"}

// checkStatus returns the conformance status of (case, backend, dtype) across all check files,
// falling back to any dtype of (case, backend); the worst wins (FAIL, then OK, then NS).
// It returns dash when the case was not checked.
func (in Input) checkStatus(caseName, backend, dtype string) string {
	exact, anyDType := "", ""
	for _, f := range in.Check {
		for _, r := range f.Rows {
			if r.Case != caseName || r.Backend != backend {
				continue
			}
			anyDType = worse(anyDType, r.Status)
			if r.DType == dtype {
				exact = worse(exact, r.Status)
			}
		}
	}
	return cmp.Or(exact, anyDType, dash)
}

// worse returns the worse of two statuses: FAIL > OK > NS > "".
func worse(a, b string) string {
	rank := map[string]int{"": 0, results.StatusNS: 1, results.StatusOK: 2, results.StatusFail: 3}
	ra, oka := rank[a]
	rb, okb := rank[b]
	if !oka { // an unknown status is shown as it is, ranked like FAIL
		ra = 3
	}
	if !okb {
		rb = 3
	}
	if rb > ra {
		return b
	}
	return a
}
