package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"vitbench/bench/cases"
	"vitbench/bench/report"
	"vitbench/bench/results"
	"vitbench/bench/safeio"
	vcpu "vitbench/impl/cpu"
)

func cmdReport(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("report", stderr)
	out := fs.String("o", "", "write the report to this file instead of stdout")
	title := fs.String("title", "vitbench report", "report title")
	peak := fs.Float64("peak-gflops", 0, "the machine's measured fp32 peak in GFLOP/s, for % of peak (0 = unknown)")
	peakFile := fs.String("peak", "", "a peak.json (vitbench peak -json, or vitbench run's) giving the CPU rows' % of peak and the roofline's ceilings")
	base := fs.String("base", "", "a timing file to compare this report's vitbench rows with in the A/B section (default: PyTorch against vitbench)")
	machine := machineFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() == 0 {
		return exitUsage, usagef("name at least one result file (vitbench bench -o, vitbench check -json, reference/bench_torch.py -o)")
	}
	if *out != "" {
		if err := checkOutputs("-o", *out, "-o (throughput chart)", figurePath(*out, "throughput"),
			"-o (roofline chart)", figurePath(*out, "roofline")); err != nil {
			return exitUsage, err
		}
	}
	in, err := loadReportInput(fs.Args())
	if err != nil {
		return exitUsage, usageError{err}
	}
	fillMachines(&in, strings.TrimSpace(*machine))
	in.Title, in.PeakGFLOPs = *title, *peak
	in.Roof.GFLOPs = *peak
	if *peakFile != "" {
		pk, err := readPeak(*peakFile)
		if err != nil {
			return exitUsage, usageError{err}
		}
		in.PeakByBackend = peaksByBackend(pk, threadsOfRows(in))
		in.Roof = roofFor(pk, threadsOfRows(in), *peakFile)
	}
	if *base != "" {
		bf, err := results.ReadBench(*base)
		if err != nil {
			return exitUsage, usageError{err}
		}
		in.Base, in.BasePath = &bf, *base
	}
	return writeReport(in, *out, stdout, stderr)
}

// loadReportInput reads result files of either kind, sniffing each.
func loadReportInput(paths []string) (report.Input, error) {
	in := report.Input{Cases: caseInfos()}
	for _, p := range paths {
		b, c, err := results.ReadAny(p)
		if err != nil {
			return in, err
		}
		if b != nil {
			in.Bench = append(in.Bench, *b)
			in.BenchPaths = append(in.BenchPaths, p)
		}
		if c != nil {
			in.Check = append(in.Check, *c)
			in.CheckPaths = append(in.CheckPaths, p)
		}
	}
	return in, nil
}

// caseInfos describes every built-in case for the report's tables.
func caseInfos() map[string]report.CaseInfo {
	m := map[string]report.CaseInfo{}
	for _, c := range cases.All() {
		s, err := c.Spec(0)
		if err != nil {
			continue
		}
		img := ""
		if sh := s.Inputs()[0].Shape; len(sh) == 4 {
			img = fmt.Sprintf("%d×%d", sh[2], sh[3])
		}
		macs, bytes := s.MACs(), s.Bytes()
		if c.Kind == "network" && c.Batch > 1 {
			// The networks table reads MACs and bytes per image.
			macs, bytes = macs/int64(c.Batch), bytes/int64(c.Batch)
		}
		top1, labels := false, false
		for _, o := range s.Outputs() {
			top1 = top1 || (c.Kind == "network" && o.Name == "logits" && len(o.Shape) == 2)
			labels = labels || (c.Kind == "network" && o.Name == "labels")
		}
		m[c.Name] = report.CaseInfo{Name: c.Name, Kind: c.Kind, Op: c.Op, Params: s.Params(), MACs: macs,
			Bytes: bytes, ImgSize: img, Top1: top1, Labels: labels}
	}
	return m
}

// figurePath is where writeReport puts the chart kind ("throughput", "roofline") of the
// report at path: path's name without extension, then -<kind>.png, beside it.
func figurePath(path, kind string) string {
	prefix := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return filepath.Join(filepath.Dir(path), prefix+"-"+kind+".png")
}

// writeReport writes the Markdown report to stdout, or to path with its charts beside it
// (figurePath), every file atomically. A report that cannot be written is kept in a
// fallback file (saveResult) and the exit status is 3, as it is when a chart cannot be.
func writeReport(in report.Input, path string, stdout, stderr io.Writer) (int, error) {
	if path == "" {
		return exitOK, report.Markdown(stdout, in)
	}
	prefix := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	figs, notes, figErr := report.WriteFigures(filepath.Dir(path), prefix, in)
	if figErr != nil {
		notes = append(notes, fmt.Sprintf("the charts could not be written: %v", figErr))
		figErr = fmt.Errorf("writing the charts beside %s: %v (the report says so)", path, figErr)
	}
	in.Figures, in.FigureNotes = figs, notes
	if err := saveResult(path, func(w io.Writer) error { return report.Markdown(w, in) }, stdout); err != nil {
		return exitWrite, errors.Join(err, figErr)
	}
	if figErr != nil {
		return exitWrite, figErr
	}
	for _, f := range figs {
		fmt.Fprintf(stderr, "plot written to %s\n", filepath.Join(filepath.Dir(path), f.Path))
	}
	fmt.Fprintf(stderr, "report written to %s\n", path)
	return exitOK, nil
}

// readPeak reads a peak measurement written as JSON (a regular file of at most 1 MiB).
func readPeak(path string) (vcpu.PeakResult, error) {
	var pk vcpu.PeakResult
	raw, err := safeio.ReadFile(path, 1<<20)
	if err != nil {
		return pk, err
	}
	if err := json.Unmarshal(raw, &pk); err != nil {
		return pk, fmt.Errorf("%s: not a peak measurement: %v", path, err)
	}
	if !(pk.FMATotal > 0) || !(pk.FMAPerCore > 0) {
		return pk, fmt.Errorf("%s: no positive fma_gflops_total and fma_gflops_per_core", path)
	}
	return pk, nil
}

// peaksByBackend is the peak each CPU backend's rows are read against: the
// fp32 FMA peak for cpu, for cpu-bf16 the AMX tile peak where the peak
// file has one (cpu-bf16 then runs its products on AMX), else the bf16 dot
// product's, each for threads threads as cpuPeakFor says.
func peaksByBackend(pk vcpu.PeakResult, threads int) map[string]float64 {
	m := map[string]float64{"cpu": cpuPeakFor(pk, threads)}
	switch {
	case pk.AMXPerCore > 0:
		m["cpu-bf16"] = pk.AMXTotal
		if threads == 1 {
			m["cpu-bf16"] = pk.AMXPerCore
		}
	case pk.BF16PerCore > 0:
		m["cpu-bf16"] = pk.BF16Total
		if threads == 1 {
			m["cpu-bf16"] = pk.BF16PerCore
		}
	}
	return m
}

// cpuPeakFor is the peak the CPU rows are read against: the one-thread
// figure for single-threaded rows, the all-threads figure otherwise.
func cpuPeakFor(pk vcpu.PeakResult, threads int) float64 {
	if threads == 1 {
		return pk.FMAPerCore
	}
	return pk.FMATotal
}

// roofFor returns the roofline's ceilings for rows run on threads threads: the one-thread
// FMA peak and bandwidth for single-threaded rows, the all-threads figures otherwise.
func roofFor(pk vcpu.PeakResult, threads int, source string) report.Roof {
	r := report.Roof{GFLOPs: pk.FMATotal, GBps: pk.BandwidthTotal, Threads: pk.Threads,
		Source: fmt.Sprintf("%s: fp32 FMA (%s), best of triad and copy", source, pk.ISA)}
	if threads == 1 {
		r.GFLOPs, r.GBps, r.Threads = pk.FMAPerCore, pk.Bandwidth1T, 1
	}
	return r
}

// threadsOfRows returns the thread count of the vitbench timing files (the
// first one found; 0 when unknown).
func threadsOfRows(in report.Input) int {
	for _, f := range in.Bench {
		for _, r := range f.Rows {
			if r.Backend == "cpu" && r.Threads > 0 {
				return r.Threads
			}
		}
	}
	return 0
}
