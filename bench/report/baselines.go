package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// unknownCode marks a PyTorch row whose file does not say what code it ran (a file written
// before reference/bench_torch.py recorded it).
const unknownCode = "unknown"

// baselineCodes gives each distinct label of the PyTorch rows (results.BenchRow.Baseline, as
// reference/bench_torch.py records it) a short marker — a, b, …, z, a2, … in case order — so
// that a table names the code each speed-up is measured against in a narrow column and
// spells the labels out once in a legend under it.
type baselineCodes struct {
	labels []string
}

// newBaselineCodes collects the labels of the PyTorch rows of es for which keep is true (one
// table's), in es's order, so that each table's markers run a, b, c, ….
func newBaselineCodes(es []entry, keep func(entry) bool) *baselineCodes {
	c := &baselineCodes{}
	for _, e := range es {
		if e.Backend == TorchBackend && e.Baseline != "" && keep(e) && !slices.Contains(c.labels, e.Baseline) {
			c.labels = append(c.labels, e.Baseline)
		}
	}
	return c
}

// markerOf returns the marker of the i-th label: a…z, then a2…z2, and so on.
func markerOf(i int) string {
	m := string(rune('a' + i%26))
	if i >= 26 {
		m += fmt.Sprint(i/26 + 1)
	}
	return m
}

// mark returns the marker of PyTorch row t's label, unknownCode when it records none.
func (c *baselineCodes) mark(t entry) string {
	i := slices.Index(c.labels, t.Baseline)
	if t.Baseline == "" || i < 0 {
		return unknownCode
	}
	return markerOf(i)
}

// codeCell returns the cell of a table's "PyTorch code" column for the marks of the PyTorch
// rows beside a row: the distinct marks joined by commas, dash when there is no PyTorch row.
func codeCell(marks []string) string {
	var out []string
	for _, m := range marks {
		out = appendNew(out, m)
	}
	return orDash(strings.Join(out, ", "))
}

// writeLegend writes, under a table, one line per marker used in cells (its label), and
// one for unknownCode when used; nothing when no cell holds a marker.
func (c *baselineCodes) writeLegend(w io.Writer, cells []string) {
	used := map[string]bool{}
	for _, cell := range cells {
		for _, m := range strings.Split(cell, ", ") {
			used[m] = true
		}
	}
	var lines []string
	for i, l := range c.labels {
		if used[markerOf(i)] {
			lines = append(lines, fmt.Sprintf("- PyTorch code %s: %s", markerOf(i), Inline(l)))
		}
	}
	if used[unknownCode] {
		lines = append(lines, "- PyTorch code unknown: the PyTorch results do not say what code ran "+
			"(written before reference/bench_torch.py recorded it; its --labels-only run adds the lines)")
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhat each PyTorch figure ran (the reference module and how it computes):\n\n%s\n", strings.Join(lines, "\n"))
}
