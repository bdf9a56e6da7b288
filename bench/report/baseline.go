package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"vitbench/bench/results"
	"vitbench/bench/safeio"
)

// BaselineFormat is the version of the baseline file layout.
const BaselineFormat = 1

// Baseline holds the deterministic metrics of the built-in cases — what a commit must not
// change unless it means to, and then regenerates the file: the case's description and
// analytic counts, and the CPU allocator's peak bytes for one run, measured per ISA path
// at a fixed thread count (the kernels' packing buffers differ between paths and their
// per-worker scratch with the thread count). No timings.
type Baseline struct {
	// Regenerate is the command that wrote the file.
	Regenerate string `json:"regenerate"`
	Format     int    `json:"format"`
	// PeakThreads is the CPU thread count the peak bytes were measured at; PeakISAs the
	// ISA paths measured (keys of BaselineCase.PeakBytes).
	PeakThreads int            `json:"peak_threads"`
	PeakISAs    []string       `json:"peak_isas"`
	Cases       []BaselineCase `json:"cases"`
}

// BaselineCase is the deterministic description of one case.
type BaselineCase struct {
	Case      string `json:"case"`
	Kind      string `json:"kind"`
	Op        string `json:"op"`
	DType     string `json:"dtype"`
	Batch     int    `json:"batch"`
	Tolerance string `json:"tolerance"`
	Params    int64  `json:"params"`
	MACs      int64  `json:"macs"`
	Bytes     int64  `json:"bytes"`
	// Inputs and Outputs give each array's shape, "1x3x224x224", by name; WeightArrays
	// counts the weight arrays (their sizes add up to Params).
	Inputs       map[string]string `json:"inputs"`
	Outputs      map[string]string `json:"outputs"`
	WeightArrays int               `json:"weight_arrays"`
	// PeakBytes is the CPU allocator's peak over one run (B/peak), by ISA path; a path
	// missing here was not measured (or the backend does not support the case).
	PeakBytes map[string]int64 `json:"peak_bytes,omitempty"`
}

// ShapeString writes a shape as "1x3x224x224" ("scalar" for no dimensions).
func ShapeString(dims []int) string {
	if len(dims) == 0 {
		return "scalar"
	}
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "x")
}

// metrics lists the case's deterministic values by name, in a fixed order, for diffing.
// Peak bytes appear as "B/peak[isa]".
func (c BaselineCase) metrics() [][2]string {
	m := [][2]string{
		{"kind", c.Kind}, {"op", c.Op}, {"dtype", c.DType}, {"batch", fmt.Sprint(c.Batch)},
		{"tolerance", c.Tolerance}, {"params", fmt.Sprint(c.Params)}, {"MACs", fmt.Sprint(c.MACs)},
		{"bytes", fmt.Sprint(c.Bytes)}, {"weight arrays", fmt.Sprint(c.WeightArrays)},
	}
	for _, arrays := range []struct {
		group string
		m     map[string]string
	}{{"input", c.Inputs}, {"output", c.Outputs}} {
		for _, name := range slices.Sorted(maps.Keys(arrays.m)) {
			m = append(m, [2]string{arrays.group + " " + name, arrays.m[name]})
		}
	}
	for _, isa := range slices.Sorted(maps.Keys(c.PeakBytes)) {
		m = append(m, [2]string{"B/peak[" + isa + "]", fmt.Sprint(c.PeakBytes[isa])})
	}
	return m
}

// BaselineDiff is what DiffBaseline found.
type BaselineDiff struct {
	// Changed lists "case: metric base -> head" for every metric that differs, an array
	// that appeared or disappeared included; Vanished the baseline cases head lacks.
	// Both are failures.
	Changed, Vanished []string
	// New lists head's cases the baseline does not know yet: not a failure (regenerate
	// the baseline to record them).
	New []string
	// Notes says what could not be compared (peak bytes of an ISA path or at a thread
	// count head did not measure).
	Notes []string
}

// Failed reports whether the diff holds a change or a vanished case.
func (d BaselineDiff) Failed() bool { return len(d.Changed)+len(d.Vanished) > 0 }

// DiffBaseline compares head's cases with base's, metric by metric. Peak bytes are
// compared for the ISA paths both measured, and only when both measured them at the same
// thread count.
func DiffBaseline(base, head Baseline) BaselineDiff {
	var d BaselineDiff
	comparePeaks := base.PeakThreads == head.PeakThreads
	if len(head.PeakISAs) == 0 && len(base.PeakISAs) > 0 {
		d.Notes = append(d.Notes, "peak bytes not compared: not measured in this run")
	}
	if !comparePeaks && len(base.PeakISAs) > 0 && len(head.PeakISAs) > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("peak bytes not compared: the baseline measured them at %d threads, this run at %d",
			base.PeakThreads, head.PeakThreads))
	}
	for _, isa := range base.PeakISAs {
		if comparePeaks && len(head.PeakISAs) > 0 && !slices.Contains(head.PeakISAs, isa) {
			d.Notes = append(d.Notes, fmt.Sprintf("peak bytes on the %s path not compared: not measured here", isa))
		}
	}
	for _, isa := range head.PeakISAs {
		if !slices.Contains(base.PeakISAs, isa) {
			d.Notes = append(d.Notes, fmt.Sprintf("peak bytes on the %s path not compared: the baseline has none", isa))
		}
	}
	shared := func(isa string) bool {
		return comparePeaks && slices.Contains(base.PeakISAs, isa) && slices.Contains(head.PeakISAs, isa)
	}
	heads := map[string]BaselineCase{}
	for _, c := range head.Cases {
		heads[c.Case] = c
	}
	known := map[string]bool{}
	for _, b := range base.Cases {
		known[b.Case] = true
		h, ok := heads[b.Case]
		if !ok {
			d.Vanished = append(d.Vanished, b.Case)
			continue
		}
		bm, hm := filterPeaks(b.metrics(), shared), filterPeaks(h.metrics(), shared)
		hv := map[string]string{}
		for _, kv := range hm {
			hv[kv[0]] = kv[1]
		}
		for _, kv := range bm {
			name, bv := kv[0], kv[1]
			v, ok := hv[name]
			switch {
			case !ok:
				d.Changed = append(d.Changed, fmt.Sprintf("%s: %s %s -> (none)", b.Case, name, bv))
			case v != bv:
				d.Changed = append(d.Changed, fmt.Sprintf("%s: %s %s -> %s", b.Case, name, bv, v))
			}
			delete(hv, name)
		}
		for _, kv := range hm {
			if v, ok := hv[kv[0]]; ok {
				d.Changed = append(d.Changed, fmt.Sprintf("%s: %s (none) -> %s", b.Case, kv[0], v))
			}
		}
	}
	for _, h := range head.Cases {
		if !known[h.Case] {
			d.New = append(d.New, h.Case)
		}
	}
	return d
}

// filterPeaks drops the "B/peak[isa]" metrics of paths keep rejects.
func filterPeaks(m [][2]string, keep func(isa string) bool) [][2]string {
	out := m[:0:0]
	for _, kv := range m {
		if isa, ok := strings.CutPrefix(kv[0], "B/peak["); ok && !keep(strings.TrimSuffix(isa, "]")) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// WriteBaselineDiff writes d for a person reading CI output: what failed (each change
// naming its case and metric), what is new, what was not compared, and how to regenerate.
func WriteBaselineDiff(w io.Writer, path string, base Baseline, d BaselineDiff) {
	fmt.Fprintf(w, "baseline %s: %d cases", path, len(base.Cases))
	if len(base.PeakISAs) > 0 {
		fmt.Fprintf(w, ", peak bytes on %s at %d threads", strings.Join(base.PeakISAs, ", "), base.PeakThreads)
	}
	fmt.Fprintln(w)
	printList(w, "CHANGED deterministic metrics (failures)", d.Changed)
	printList(w, "VANISHED cases (failures)", d.Vanished)
	printList(w, "New cases, not in the baseline yet (not failures)", d.New)
	printList(w, "Not compared", d.Notes)
	switch {
	case d.Failed():
		fmt.Fprintf(w, "\nFAIL: %d metric changes, %d vanished cases. If the change is intended, regenerate the baseline:\n  %s\n",
			len(d.Changed), len(d.Vanished), base.Regenerate)
	case len(d.New) > 0:
		fmt.Fprintf(w, "\nok: no change; %d new cases (regenerate to record them: %s)\n", len(d.New), base.Regenerate)
	default:
		fmt.Fprintln(w, "\nok: no change")
	}
}

// WriteBaseline writes b as JSON with one case per line, sorted by name, so that a
// regenerated baseline diffs line by line in review.
func WriteBaseline(w io.Writer, b Baseline) error {
	cs := slices.Clone(b.Cases)
	slices.SortFunc(cs, func(x, y BaselineCase) int { return cmp.Compare(x.Case, y.Case) })
	head := b
	head.Cases = nil
	hj, err := json.Marshal(head)
	if err != nil {
		return err
	}
	// Everything but the cases on the first lines, then "cases": one per line.
	var buf bytes.Buffer
	buf.Write(bytes.TrimSuffix(hj, []byte(`,"cases":null}`)))
	buf.WriteString(",\n\"cases\": [\n")
	for i, c := range cs {
		cj, err := json.Marshal(c)
		if err != nil {
			return err
		}
		buf.Write(cj)
		if i < len(cs)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]}\n")
	_, err = w.Write(buf.Bytes())
	return err
}

// ReadBaseline reads a file WriteBaseline wrote (a regular file; a FIFO or device is an
// error naming it).
func ReadBaseline(path string) (Baseline, error) {
	var b Baseline
	raw, err := safeio.ReadFile(path, results.MaxFileBytes)
	if err != nil {
		return b, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("%s: not a baseline: %v", path, err)
	}
	if b.Format != BaselineFormat {
		return b, fmt.Errorf("%s: baseline format %d, this vitbench reads %d", path, b.Format, BaselineFormat)
	}
	return b, nil
}
