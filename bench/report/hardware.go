package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
)

// writeHardware writes, when the bench files cover more than one (machine, backend) pair,
// one row per (case, batch, dtype) and one column per (machine, backend) holding the median
// latency in ms. Where one cell has rows at several thread counts, the fastest is shown.
func writeHardware(w io.Writer, in Input, es []entry) error {
	type col struct{ machine, backend string }
	type rowKey struct {
		caseName, dtype string
		batch           int
	}
	var cols []col
	var keys []rowKey
	best := map[rowKey]map[col]float64{}
	for _, e := range es {
		c := col{e.machine, e.Backend}
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
		k := rowKey{e.Case, e.DType, e.Batch}
		if best[k] == nil {
			best[k] = map[col]float64{}
			keys = append(keys, k)
		}
		if old, ok := best[k][c]; !ok || (finite(e.MedianNs) && e.MedianNs < old) {
			best[k][c] = e.MedianNs
		}
	}
	if len(in.Bench) < 2 || len(cols) < 2 {
		return nil
	}
	slices.SortFunc(cols, func(a, b col) int {
		return cmp.Or(cmp.Compare(a.machine, b.machine), cmp.Compare(a.backend, b.backend))
	})
	header := []string{"case", "batch", "dtype"}
	align := "lrl"
	for _, c := range cols {
		header = append(header, fmt.Sprintf("%s / %s ms", c.machine, c.backend))
		align += "r"
	}
	var cells [][]string
	for _, k := range keys {
		row := []string{k.caseName, fmt.Sprint(k.batch), k.dtype}
		for _, c := range cols {
			cell := dash
			if v, ok := best[k][c]; ok {
				cell = fmtMs(v)
			}
			row = append(row, cell)
		}
		cells = append(cells, row)
	}
	section(w, "Hardware comparison", "Median latency per call in ms on each machine and backend (fastest thread count where several were measured).")
	return writeTable(w, align, header, cells)
}
