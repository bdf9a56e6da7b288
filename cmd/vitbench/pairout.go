package main

import (
	"cmp"
	"fmt"
	"math"
	"strings"
	"time"

	"vitbench/bench"
	"vitbench/bench/contention"
	"vitbench/bench/results"
	"vitbench/bench/runner"
)

// pairFiles returns the result files of pair: vitbench's rows (bench.txt) and ONNX
// Runtime's (ort.txt), each case's samples in pair order, with the foreign load over each
// side's own samples; a case without pairs is a failure line (NS where a side cannot run
// it) so that no case goes missing. `vitbench report` reads both files.
func pairFiles(done []pairCase, b bench.Backend, threads int, machine string, srv *ortServer) (vb, ort results.BenchFile) {
	vb.Meta = newMeta(threads)
	vb.Meta.Machine = machine
	ort.Meta = results.Meta{GOOS: vb.Meta.GOOS, GOARCH: vb.Meta.GOARCH, CPU: srv.CPU, Date: vb.Meta.Date, Machine: machine,
		Extra: map[string]string{"ort-version": srv.Version, "ort-opset": fmt.Sprint(srv.Opset), "ort-provider": "cpu", "clock": "wall"}}
	isa := b.Info().Details["isa"]
	for _, pc := range done {
		if len(pc.VitbenchNs) == 0 {
			why, ns := pc.Err, false
			switch {
			case pc.NS != "":
				why, ns = pc.NS, true
			case pc.Interrupted:
				why = "interrupted before its first pair"
			}
			vb.Failed = append(vb.Failed, results.BenchFailure{Case: pc.Case, Backend: b.Name(), Batch: pc.Batch, Threads: threads,
				DType: string(pc.DType), Error: "no pair: " + why, NS: ns})
			ort.Failed = append(ort.Failed, results.BenchFailure{Case: pc.Case, Backend: ortBackend, Batch: pc.Batch, Threads: threads,
				DType: "float32", Error: why, NS: ns})
			continue
		}
		spec := pc.Spec
		row := results.NewBenchRow(pc.Case, b.Name(), pc.Batch, threads, string(pc.DType), spec.MACs(), spec.Bytes(), pc.Peak, pc.RSS,
			pc.VitbenchNs, nil)
		row.Runs, row.ISA = pc.VitbenchRuns, isa
		row.Load = rowLoad(pc.VitbenchLoad, pc.VitbenchNs, pc.VitbenchRuns)
		runner.DescribeRow(&row, spec)
		vb.Rows = append(vb.Rows, row)
		orow := results.NewBenchRow(pc.Case, ortBackend, pc.Batch, threads, "float32", spec.MACs(), spec.Bytes(), 0, pc.OrtRSS,
			pc.OrtNs, nil)
		orow.Runs, orow.Baseline = pc.OrtRuns, pc.OrtLabel
		runner.DescribeRow(&orow, spec)
		orow.Load = rowLoad(pc.OrtLoad, pc.OrtNs, pc.OrtRuns)
		ort.Rows = append(ort.Rows, orow)
	}
	return vb, ort
}

// rowLoad is the row's contention record for a foreign load over samples (nil when the
// load was not measured).
func rowLoad(load float64, ns []float64, runs []int) *results.RowLoad {
	if math.IsNaN(load) {
		return nil
	}
	wall := 0.0
	for i, t := range ns {
		wall += t * float64(runs[i])
	}
	return &results.RowLoad{Foreign: load, Contended: contention.Contended(load, time.Duration(wall))}
}

// pairsMarkdown is pairs.md: per case the median of each side's samples, the median of
// the pair-by-pair ratios ORT / vitbench with its 95% interval, and the foreign load over
// each side's samples, then how the pairs were taken.
func pairsMarkdown(done []pairCase, backend, commit string, threads int, rewarm time.Duration, machine string, srv *ortServer, partial string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# vitbench %s against ONNX Runtime %s, sample by sample\n\n", backend, srv.Version)
	if partial != "" {
		fmt.Fprintf(&sb, "**Partial:** %s\n\n", partial)
	}
	where := machine
	if !strings.Contains(machine, srv.CPU) {
		where += " (" + srv.CPU + ")"
	}
	fmt.Fprintf(&sb, "Machine: %s, %d threads each side; vitbench commit %s.\n\n", where, threads, cmp.Or(commit, "unknown"))
	sb.WriteString("| case | batch | pairs | vitbench ms | ORT ms | ORT / vitbench, median of pairs [95% CI] | foreign load vitbench / ORT |\n")
	sb.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, pc := range done {
		switch {
		case pc.NS != "":
			fmt.Fprintf(&sb, "| %s | %d | 0 | | | NS: %s | |\n", pc.Case, pc.Batch, mdCell(pc.NS))
			continue
		case len(pc.Ratios()) == 0:
			fmt.Fprintf(&sb, "| %s | %d | 0 | | | FAIL: %s | |\n", pc.Case, pc.Batch, mdCell(pc.Err))
			continue
		}
		r := results.Summarize(pc.Ratios())
		v, o := results.Summarize(pc.VitbenchNs), results.Summarize(pc.OrtNs)
		ci := intervalText(r)
		note := ""
		if pc.Err != "" {
			note = " (then FAIL: " + mdCell(pc.Err) + ")"
		} else if pc.Interrupted {
			note = " (interrupted)"
		}
		fmt.Fprintf(&sb, "| %s | %d | %d | %.3f | %.3f | **%.3f×** [%s]%s | %s / %s |\n", pc.Case, pc.Batch, r.N,
			v.Median/1e6, o.Median/1e6, r.Median, ci, note, pct(pc.VitbenchLoad), pct(pc.OrtLoad))
	}
	fmt.Fprintf(&sb, "\nEach pair is one vitbench sample and one ONNX Runtime sample taken back to back (vitbench first in even pairs, ONNX Runtime first in odd ones); "+
		"each sample follows at least %v of untimed runs of its own side (at least one). The interval is the median's, from the order statistics of the ratios (no distribution assumed; — below 6 pairs).\n", rewarm)
	return sb.String()
}

// pct formats a load as a percentage, "n/a" when not measured.
func pct(load float64) string {
	if math.IsNaN(load) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*load)
}

// mdCell makes s safe inside a Markdown table cell: one line, no unescaped pipes.
func mdCell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", "\\|")
}

// intervalText formats a summary's 95% interval, "—" when there are too few samples for one.
func intervalText(s results.Summary) string {
	if math.IsInf(s.CILow, 0) || math.IsInf(s.CIHigh, 0) || math.IsNaN(s.CILow) || math.IsNaN(s.CIHigh) {
		return "—"
	}
	return fmt.Sprintf("%.3f–%.3f", s.CILow, s.CIHigh)
}
