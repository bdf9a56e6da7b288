package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"vitbench/bench/accuracy"
	"vitbench/bench/results"
)

// precisionPair is one network timed in fp32 and in bf16 on the same machine, batch and
// threads: fp32 is the row of the fp32 backend ("cpu"), bf16 the row of its bf16 variant
// ("cpu-bf16").
type precisionPair struct {
	fp32, bf16 entry
}

// fp32Backend returns the fp32 backend a bf16 backend is the variant of ("cpu-bf16" → "cpu",
// "cuda-emu-bf16" → "cuda-emu"), or "" when backend is not a bf16 backend.
func fp32Backend(backend string) string {
	if accuracy.Precision(backend) != "bf16" {
		return ""
	}
	return strings.TrimSuffix(backend, "-bf16")
}

// precisionPairs pairs every network row of a bf16 backend with the row of its fp32 backend
// (fp32Backend) of the same case, batch, threads, dtype and machine; a bf16 row without that
// fp32 row, and an fp32 row without a bf16 one, are left out. Pairs come in the compact
// table's order: family (familyOrder), case, backend, machine, batch, threads.
func precisionPairs(in Input, es []entry) []precisionPair {
	var ps []precisionPair
	for _, b := range es {
		base := fp32Backend(b.Backend)
		if base == "" || in.kind(b.Case) != KindNetwork {
			continue
		}
		i := slices.IndexFunc(es, func(f entry) bool {
			return f.Backend == base && f.Case == b.Case && f.Batch == b.Batch && f.Threads == b.Threads &&
				f.DType == b.DType && f.machine == b.machine
		})
		if i >= 0 {
			ps = append(ps, precisionPair{fp32: es[i], bf16: b})
		}
	}
	slices.SortStableFunc(ps, func(x, y precisionPair) int {
		a, b := x.bf16, y.bf16
		fa, fb := in.opOf(a.Case), in.opOf(b.Case)
		return cmp.Or(cmp.Compare(familyRank(fa), familyRank(fb)), cmp.Compare(fa, fb), cmp.Compare(a.Case, b.Case),
			cmp.Compare(a.Backend, b.Backend), cmp.Compare(a.machine, b.machine), cmp.Compare(a.Batch, b.Batch),
			cmp.Compare(a.Threads, b.Threads))
	})
	return ps
}

// writePrecisionPairs writes the "fp32 and bf16 side by side" table: for every network timed
// on both an fp32 backend and its bf16 variant (precisionPairs), the two median latencies,
// bf16's speed-up over fp32 (fp32 median / bf16 median), bf16's conformance status and the
// NMSE of its worst output against the reference (the fixtures hold the fp32 PyTorch
// outputs), fp32's NMSE for scale, and whether bf16 picks the reference's classes
// (classAgreement). Nothing is written when no network has both.
func writePrecisionPairs(w io.Writer, in Input, es []entry) error {
	ps := precisionPairs(in, es)
	if len(ps) == 0 {
		return nil
	}
	multiMachine := machineCount(es) > 1
	var backends []string
	for _, p := range ps {
		backends = appendNew(backends, p.bf16.Backend)
	}
	multiBackend := len(backends) > 1
	var cells [][]string
	for _, p := range ps {
		f, b := p.fp32, p.bf16
		status, nmse := dash, dash
		bc := in.checkRow(b.Case, b.Backend, b.DType)
		if bc != nil {
			status = bc.Status
			if bc.Status != results.StatusNS {
				nmse = fmtSci(bc.NMSE)
				if bc.Output != "" {
					nmse += " (" + bc.Output + ")"
				}
			}
		}
		fnmse := dash
		if fc := in.checkRow(f.Case, f.Backend, f.DType); fc != nil && fc.Status != results.StatusNS {
			fnmse = fmtSci(fc.NMSE)
		}
		row := []string{b.Case}
		if multiBackend {
			row = append(row, f.Backend+" / "+b.Backend)
		}
		row = append(row, fmt.Sprint(b.Batch), fmt.Sprint(b.Threads),
			fmtMs(f.MedianNs)+loadMark(f.BenchRow), fmtMs(b.MedianNs)+loadMark(b.BenchRow),
			fmtSpeedup(f.MedianNs, b.MedianNs), status, nmse, fnmse, in.classAgreement(b.Case, bc))
		if multiMachine {
			row = append([]string{b.machine}, row...)
		}
		cells = append(cells, row)
	}
	header := []string{"model"}
	align := "l"
	if multiBackend {
		header, align = append(header, "backends"), align+"l"
	}
	header = append(header, "batch", "threads", "fp32 ms", "bf16 ms", "bf16 speed-up", "bf16 check", "bf16 NMSE (worst output)",
		"fp32 NMSE", "bf16 classes")
	align += "rrrrrlrrl"
	if multiMachine {
		header, align = append([]string{"machine"}, header...), "l"+align
	}
	fmt.Fprintf(w, "\n### fp32 and bf16 side by side\n\nEach network timed on %s: median latencies at the same batch and threads,"+
		" bf16 speed-up = fp32 median / bf16 median; NMSE against the reference (the fp32 PyTorch outputs of the fixtures),"+
		" bf16 checked under the @bf16 tolerance classes. bf16 classes: top-1 of every image for classifiers, the"+
		" detections' labels (top-k, or each query's argmax, near ties aligned) for detectors; %s for a network without"+
		" a class output.\n\n", strings.Join(pairNames(ps), ", "), dash)
	return writeTable(w, align, header, cells)
}

// pairNames lists the backend pairs of ps once each, as "cpu and cpu-bf16".
func pairNames(ps []precisionPair) []string {
	var names []string
	for _, p := range ps {
		names = appendNew(names, p.fp32.Backend+" and "+p.bf16.Backend)
	}
	return names
}

// classAgreement says whether a network's classes on a reduced-precision backend match the
// reference's, from its conformance row r: for a classifier (CaseInfo.Top1) the check compares
// the top-1 class of every image once the logits pass, so OK is "top-1 same", a top-1 failure
// its count ("top-1 differs for 1 of 2 images"), and any other failure leaves it unknown; for a
// detector (CaseInfo.Labels) the labels output is compared (near ties aligned): OK is "labels
// same", a failure on labels "labels differ", a failure elsewhere unknown. A network with
// neither class output gets dash, as does a case not checked or not supported.
func (in Input) classAgreement(caseName string, r *results.CheckRow) string {
	info := in.Cases[caseName]
	if r == nil || r.Status == results.StatusNS || (!info.Top1 && !info.Labels) {
		return dash
	}
	what := "top-1"
	if !info.Top1 {
		what = "labels"
	}
	switch {
	case r.Status == results.StatusOK:
		return what + " same"
	case info.Top1 && strings.Contains(r.Reason, "top-1 class "):
		_, detail, _ := strings.Cut(r.Reason, "top-1 class ")
		return "top-1 " + detail
	case !info.Top1 && r.Output == "labels":
		return "labels differ"
	}
	return fmt.Sprintf("%s not known (%s fails)", what, orDash(r.Output))
}
