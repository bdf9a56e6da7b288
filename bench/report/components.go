package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// writeComponents writes one row per bench row of a component case (or a case of unknown
// kind) measured by a backend other than PyTorch: median latency with its 95% interval, p90,
// GFLOP/s, GB/s, % of the backend's peak (Input.peak), allocator peak memory, the PyTorch median measured on the
// same machine for the same case, batch and threads with the code it ran (a marker, its label
// spelled out under the table: baselineCodes), the speed-up over it (PyTorch median /
// ours) and its ceiling (the speed-up of running the MACs at peak), the conformance status
// and the noisy flag (IQR/median > 10%); under the table, which clock each column used.
func writeComponents(w io.Writer, in Input, es []entry) error {
	multi := machineCount(es) > 1
	codes := newBaselineCodes(es, func(e entry) bool { return in.kind(e.Case) == KindComponent })
	withOrt := in.hasOrt(es)
	var cells [][]string
	var shown []entry
	var codeCells []string
	for _, e := range es {
		if isBaselineRow(e.Backend) || in.kind(e.Case) != KindComponent {
			continue
		}
		shown = append(shown, e)
		torchMs, code, speedup, ceil := dash, dash, dash, dash
		if t, ok := torchFor(es, e); ok {
			torchMs, code = fmtMs(t.MedianNs), codes.mark(t)
			speedup = speedupCell(t, e)
			ceil = ceiling(t.MedianNs, e.MACs, in.peak(e.Backend))
		}
		noisy := ""
		if e.Noisy {
			noisy = "noisy"
		}
		noisy = contentionCell(noisy, es, e)
		row := []string{e.Case, e.Backend, e.DType, fmt.Sprint(e.Batch), fmt.Sprint(e.Threads),
			in.checkStatus(e.Case, e.Backend, e.DType),
			fmtMsCI(e.MedianNs, e.CILowNs, e.CIHighNs), fmtMs(e.P90Ns),
			fmtRate(e.GFLOPs), fmtRate(e.GBps), pctOfPeak(e.GFLOPs, in.peak(e.Backend)), fmtMiB(e.PeakBytes),
			torchMs, code, speedup, ceil, noisy}
		codeCells = append(codeCells, code)
		if withOrt {
			ortMs, vsOrt := ortCells(in, es, e)
			row = append(row[:len(row)-1:len(row)-1], ortMs, vsOrt, noisy)
		}
		if multi {
			row = append([]string{e.machine}, row...)
		}
		cells = append(cells, row)
	}
	if len(cells) == 0 {
		return nil
	}
	header := []string{"case", "backend", "dtype", "batch", "threads", "check", "median ms [95% CI]", "p90 ms",
		"GFLOP/s", "GB/s", "% of peak", "peak MiB", "PyTorch ms", "PyTorch code", "vs PyTorch", "ceiling", "spread"}
	align := "lllrrlrrrrrrrlrrl"
	if withOrt {
		header = append(header[:len(header)-1:len(header)-1], "ORT ms", "vs ORT", "spread")
		align = align[:len(align)-1] + "rrl"
	}
	if multi {
		header = append([]string{"machine"}, header...)
		align = "l" + align
	}
	note := "Latency per call; GFLOP/s = 2·MACs / median; speed-up = PyTorch median / ours (same machine, batch and threads)." +
		ceilingNote
	if in.PeakGFLOPs > 0 {
		note += fmt.Sprintf(" %% of peak is of %.0f GFLOP/s", in.PeakGFLOPs)
		if len(in.PeakByBackend) > 0 {
			note += " (other peaks for " + strings.Join(slices.Sorted(maps.Keys(in.PeakByBackend)), ", ") + ")"
		}
		note += "."
	}
	section(w, "Components", note)
	if err := writeTable(w, align, header, cells); err != nil {
		return err
	}
	codes.writeLegend(w, codeCells)
	writeClocks(w, in, es, shown)
	return nil
}

// ceilingNote explains the ceiling column of the components and networks tables.
const ceilingNote = " Ceiling = PyTorch median / the time of 2·MACs at the backend's peak: the speed-up over that PyTorch run no implementation on this machine can pass."

// ceiling formats the speed-up over a PyTorch run of torchNs that computing
// macs multiply-adds at peak GFLOP/s would give; dash when unknown.
func ceiling(torchNs float64, macs int64, peak float64) string {
	if peak <= 0 || macs <= 0 {
		return dash
	}
	return fmtSpeedup(torchNs, 2*float64(macs)/peak)
}

// pctOfPeak formats gflops as a percentage of peak; dash when either is unknown.
func pctOfPeak(gflops, peak float64) string {
	if peak <= 0 || !finite(gflops) || gflops <= 0 {
		return dash
	}
	return fmt.Sprintf("%.1f%%", 100*gflops/peak)
}

// machineCount counts the distinct machines among es.
func machineCount(es []entry) int {
	seen := map[string]bool{}
	for _, e := range es {
		seen[e.machine] = true
	}
	return len(seen)
}
