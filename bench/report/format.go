package report

import (
	"fmt"
	"io"
	"math"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// dash marks a value that is not available.
const dash = "—"

// writeTable renders a Markdown table; align gives each column's alignment ('l' or 'r').
// Cells are escaped so that '|' and line breaks cannot break the table.
func writeTable(w io.Writer, align string, header []string, rows [][]string) error {
	al := make(tw.Alignment, len(header))
	for i := range al {
		al[i] = tw.AlignLeft
		if i < len(align) && align[i] == 'r' {
			al[i] = tw.AlignRight
		}
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithAlignment(al))
	t.Header(escapeAll(header))
	for _, r := range rows {
		if err := t.Append(escapeAll(r)); err != nil {
			return err
		}
	}
	return t.Render()
}

func escapeAll(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		c = EscapeCell(c)
		if c == "" {
			c = " "
		}
		out[i] = c
	}
	return out
}

// finite reports whether v is a real number (not NaN or ±Inf).
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fmtSci formats an error figure as %.2e.
func fmtSci(v float64) string {
	if math.IsNaN(v) {
		return dash
	}
	return fmt.Sprintf("%.2e", v)
}

// fmtMs formats nanoseconds as milliseconds with four significant digits.
func fmtMs(ns float64) string {
	if !finite(ns) || ns <= 0 {
		return dash
	}
	ms := ns / 1e6
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.0f", ms)
	case ms >= 0.001:
		return fmt.Sprintf("%.4g", ms)
	}
	return fmt.Sprintf("%.2e", ms)
}

// fmtMsCI formats a median and its 95% interval: "1.235 [1.2, 1.25]"; "(n<6)" when the
// interval is unbounded.
func fmtMsCI(median, lo, hi float64) string {
	m := fmtMs(median)
	if m == dash {
		return m
	}
	if !finite(lo) || !finite(hi) {
		return m + " [CI n/a]"
	}
	return fmt.Sprintf("%s [%s, %s]", m, fmtMs(lo), fmtMs(hi))
}

// fmtRate formats a throughput with one decimal; dash when 0 or unknown.
func fmtRate(v float64) string {
	if !finite(v) || v <= 0 {
		return dash
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// fmtMiB formats bytes as MiB; dash when not measured.
func fmtMiB(b int64) string {
	if b <= 0 {
		return dash
	}
	return fmt.Sprintf("%.1f", float64(b)/(1<<20))
}

// fmtSpeedup formats theirs/ours as "1.85×".
func fmtSpeedup(theirs, ours float64) string {
	if !finite(theirs) || !finite(ours) || theirs <= 0 || ours <= 0 {
		return dash
	}
	return fmt.Sprintf("%.2f×", theirs/ours)
}
