package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// netGroup gathers the rows of one network on one backend at every batch size measured.
type netGroup struct {
	first entry   // identifies the group
	rows  []entry // ascending batch
}

// writeNetworks writes the network cases as the compact table first (writeNetworkSummary),
// then fp32 and bf16 side by side (writePrecisionPairs), then the detailed one: model, image size, params (M),
// GMACs per image, backend, batch-1 latency (median [95% CI] and p90), throughput in img/s at
// each batch measured (batch / median), allocator peak memory (largest over batches), the
// agreement with the reference (status, NMSE, top-1) and the PyTorch figures measured on
// the same machine beside them with the code PyTorch ran (baselineCodes); under the table, which clock each column used.
func writeNetworks(w io.Writer, in Input, es []entry) error {
	var groups []*netGroup
	index := map[string]*netGroup{}
	for _, e := range es {
		if isBaselineRow(e.Backend) || in.kind(e.Case) != KindNetwork {
			continue
		}
		key := fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%s", e.Case, e.Backend, e.DType, e.Threads, e.machine)
		g := index[key]
		if g == nil {
			g = &netGroup{first: e}
			index[key] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, e)
	}
	if len(groups) == 0 {
		return nil
	}
	multi := machineCount(es) > 1
	// Markers in the compact table's order: by family first (familyOrder).
	byFamily := slices.Clone(es)
	slices.SortStableFunc(byFamily, func(a, b entry) int {
		fa, fb := in.opOf(a.Case), in.opOf(b.Case)
		return cmp.Or(cmp.Compare(familyRank(fa), familyRank(fb)), cmp.Compare(fa, fb))
	})
	codes := newBaselineCodes(byFamily, func(e entry) bool { return in.kind(e.Case) == KindNetwork })
	withOrt := in.hasOrt(es)
	section(w, "Networks", "Throughput is batch / median latency at each batch size measured; PyTorch figures are from the same machine;"+
		" vs PyTorch = PyTorch median / ours at each batch."+ceilingNote)
	if err := writeNetworkSummary(w, in, es, groups, codes); err != nil {
		return err
	}
	if err := writePrecisionPairs(w, in, es); err != nil {
		return err
	}
	var cells [][]string
	var shown []entry
	for _, g := range groups {
		shown = append(shown, g.rows...)
		info := in.Cases[g.first.Case]
		var b1, tb1 *entry
		var peak int64
		var thr, tthr, vs, ceil, marks, ortMs, vsOrt []string
		for i := range g.rows {
			e := &g.rows[i]
			if ms, v := ortCells(in, es, *e); ms != dash {
				ortMs = append(ortMs, fmt.Sprintf("%d: %s", e.Batch, ms))
				vsOrt = append(vsOrt, fmt.Sprintf("%d: %s", e.Batch, v))
			}
			peak = max(peak, e.PeakBytes)
			thr = append(thr, fmt.Sprintf("%d: %s", e.Batch, imgPerSec(e.Batch, e.MedianNs)))
			t, ok := torchFor(es, *e)
			if ok {
				marks = append(marks, codes.mark(t))
				tthr = append(tthr, fmt.Sprintf("%d: %s", e.Batch, imgPerSec(t.Batch, t.MedianNs)))
				vs = append(vs, fmt.Sprintf("%d: %s", e.Batch, speedupCell(t, *e)))
				ceil = append(ceil, fmt.Sprintf("%d: %s", e.Batch, ceiling(t.MedianNs, e.MACs, in.peak(e.Backend))))
			}
			if e.Batch == 1 {
				b1 = e
				if ok {
					tb1 = &t
				}
			}
		}
		gmacs := info.MACs
		if gmacs == 0 && b1 != nil {
			gmacs = b1.MACs
		}
		lat, p90, torchLat := dash, dash, dash
		if b1 != nil {
			lat, p90 = fmtMsCI(b1.MedianNs, b1.CILowNs, b1.CIHighNs)+loadMark(b1.BenchRow), fmtMs(b1.P90Ns)
		}
		if tb1 != nil {
			torchLat = fmtMs(tb1.MedianNs) + loadMark(tb1.BenchRow)
		}
		row := []string{g.first.Case, orDash(info.ImgSize), millions(info.Params), billions(gmacs),
			g.first.Backend, g.first.DType, fmt.Sprint(g.first.Threads),
			in.agreement(g.first.Case, g.first.Backend, g.first.DType),
			lat, p90, strings.Join(thr, "; "), fmtMiB(peak), torchLat, orDash(strings.Join(tthr, "; ")), codeCell(marks),
			orDash(strings.Join(vs, "; ")), orDash(strings.Join(ceil, "; "))}
		if withOrt {
			row = append(row, orDash(strings.Join(ortMs, "; ")), orDash(strings.Join(vsOrt, "; ")))
		}
		if multi {
			row = append([]string{g.first.machine}, row...)
		}
		cells = append(cells, row)
	}
	header := []string{"model", "image size", "params (M)", "GMACs", "backend", "dtype", "threads", "agreement with reference",
		"batch-1 ms [95% CI]", "batch-1 p90 ms", "img/s (batch: rate)", "peak MiB", "PyTorch batch-1 ms", "PyTorch img/s",
		"PyTorch code", "vs PyTorch", "ceiling"}
	align := "lrrrllrlrrlrrllll"
	if withOrt {
		header, align = append(header, "ORT ms", "vs ORT"), align+"ll"
	}
	if multi {
		header = append([]string{"machine"}, header...)
		align = "l" + align
	}
	fmt.Fprintf(w, "\n### Every measurement\n\nEvery batch measured, with the 95%% interval, p90 and peak memory; PyTorch code as in the list above.\n\n")
	if err := writeTable(w, align, header, cells); err != nil {
		return err
	}
	writeClocks(w, in, es, shown)
	return nil
}

// imgPerSec formats batch images per median latency.
func imgPerSec(batch int, medianNs float64) string {
	if batch <= 0 || !finite(medianNs) || medianNs <= 0 {
		return dash
	}
	return fmtRate(float64(batch) * 1e9 / medianNs)
}

func millions(n int64) string {
	if n <= 0 {
		return dash
	}
	return fmt.Sprintf("%.1f", float64(n)/1e6)
}

func billions(n int64) string {
	if n <= 0 {
		return dash
	}
	return fmt.Sprintf("%.2f", float64(n)/1e9)
}

func orDash(s string) string {
	if s == "" {
		return dash
	}
	return s
}
