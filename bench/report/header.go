package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"vitbench/bench/results"
)

// writeHeader writes the title and what the results were measured with: date, commit,
// machine and CPU, ISA paths, threads, backends and tools, each the distinct values over
// all files.
func writeHeader(w io.Writer, in Input, es []entry) error {
	metas := make([]results.Meta, 0, len(in.Bench)+len(in.Check))
	for _, f := range in.Bench {
		metas = append(metas, f.Meta)
	}
	for _, f := range in.Check {
		metas = append(metas, f.Meta)
	}
	collect := func(get func(results.Meta) string) string {
		var vs []string
		for _, m := range metas {
			if v := get(m); v != "" && !slices.Contains(vs, v) {
				vs = append(vs, v)
			}
		}
		return Inline(cmp.Or(strings.Join(vs, ", "), dash))
	}
	var isas, backends, threads []string
	for _, e := range es {
		isas = appendNew(isas, e.EffectiveISA(in.Bench[e.file].Meta))
		backends = appendNew(backends, e.Backend)
		threads = appendNew(threads, strconv.Itoa(e.Threads))
	}
	for _, f := range in.Check {
		for _, r := range f.Rows {
			backends = appendNew(backends, r.Backend)
		}
	}
	slices.Sort(backends)

	fmt.Fprintf(w, "# %s\n\n", Inline(cmp.Or(in.Title, "vitbench report")))
	writePartial(w, in)
	fmt.Fprintf(w, "- Date: %s\n", collect(func(m results.Meta) string { return m.Date }))
	fmt.Fprintf(w, "- Commit: %s\n", collect(func(m results.Meta) string { return m.Commit }))
	fmt.Fprintf(w, "- Machine: %s\n", collect(func(m results.Meta) string { return m.Machine }))
	fmt.Fprintf(w, "- CPU: %s\n", collect(func(m results.Meta) string { return m.CPU }))
	if gpu := collect(func(m results.Meta) string { return m.Extra["gpu"] }); gpu != dash {
		if drv := collect(func(m results.Meta) string { return m.Extra["driver"] }); drv != dash {
			gpu += " (driver " + drv + ")"
		}
		fmt.Fprintf(w, "- GPU: %s\n", Inline(gpu))
	}
	fmt.Fprintf(w, "- ISA path: %s\n", joinOr(isas))
	fmt.Fprintf(w, "- Threads: %s\n", joinOr(threads))
	fmt.Fprintf(w, "- Backends: %s\n", joinOr(backends))
	fmt.Fprintf(w, "- Tools: %s\n", collect(toolLabel))
	if sha := collect(func(m results.Meta) string { return m.Extra[results.WeightsKey] }); sha != dash {
		fmt.Fprintf(w, "- Weights: SHA-256 %s (bench -weights: real weights, not synthesized)\n", sha)
	}
	if l := contentionSummary(in); l != "" {
		fmt.Fprintf(w, "- Contention: %s\n", l)
	}
	if l := arrangementSummary(in); l != "" {
		fmt.Fprintf(w, "- Cross-CPU round trip: %s\n", l)
	}
	return nil
}

// toolLabel names the tool of a file with the versions that matter for it.
func toolLabel(m results.Meta) string {
	var parts []string
	if m.Tool != "" {
		parts = append(parts, m.Tool)
	}
	for _, k := range []string{"torch-version", "numpy-version", "blas", "cuda"} {
		if v := m.Extra[k]; v != "" {
			name := strings.TrimSuffix(k, "-version")
			if k == "torch-version" {
				name = "PyTorch"
			}
			parts = append(parts, name+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

func appendNew(vs []string, v string) []string {
	if v == "" || slices.Contains(vs, v) {
		return vs
	}
	return append(vs, v)
}

func joinOr(vs []string) string {
	return Inline(cmp.Or(strings.Join(vs, ", "), dash))
}
