package report

import (
	"fmt"
	"io"
	"strings"
)

// OrtBackend is the backend name of rows measured by reference/bench_ort.js (ONNX Runtime,
// CPU execution provider, fp32); they fill the ORT columns instead of rows of their own.
const OrtBackend = "ort"

// isBaselineRow reports whether a backend's rows fill a baseline's columns (PyTorch, ONNX
// Runtime) rather than rows of their own in the components and networks tables.
func isBaselineRow(backend string) bool { return backend == TorchBackend || backend == OrtBackend }

// ortNS is an ONNX Runtime case that was not run (a "# NS" line): the reason, by case,
// batch, threads and machine.
type ortNS struct {
	Case, machine, reason string
	batch, threads        int
}

// ortNotRun lists the NS lines of the ORT rows in every bench file of in.
func (in Input) ortNotRun() []ortNS {
	var out []ortNS
	for _, f := range in.Bench {
		for _, x := range f.Failed {
			if x.NS && x.Backend == OrtBackend {
				out = append(out, ortNS{Case: x.Case, machine: machineName(f.Meta), reason: x.Error, batch: x.Batch, threads: x.Threads})
			}
		}
	}
	return out
}

// hasOrt reports whether the report holds any ONNX Runtime row or NS line: only then do the
// tables carry the ORT columns.
func (in Input) hasOrt(es []entry) bool {
	for _, e := range es {
		if e.Backend == OrtBackend {
			return true
		}
	}
	return len(in.ortNotRun()) > 0
}

// ortCompares reports whether a backend's rows are set beside ONNX Runtime's: the host CPU
// backends (ONNX Runtime runs on the CPU in fp32, the figure a bf16 CPU row must also beat).
func ortCompares(backend string) bool { return backend == "cpu" || strings.HasPrefix(backend, "cpu-") }

// ortFor returns the ONNX Runtime row measured on the same machine for the same case, batch
// and threads as e (any dtype: ORT's rows are fp32); ok is false when there is none or e's
// backend is not compared with ORT.
func ortFor(es []entry, e entry) (t entry, ok bool) {
	if !ortCompares(e.Backend) {
		return t, false
	}
	for _, c := range es {
		if c.Backend == OrtBackend && c.machine == e.machine && c.Case == e.Case && c.Batch == e.Batch && c.Threads == e.Threads {
			return c, true
		}
	}
	return t, false
}

// ortCells returns the "ORT ms" and "vs ORT" cells of a row: ORT's median and the speed-up
// (ORT median / ours), "NS" in both when ORT could not run the case (the reason is listed in
// the ONNX Runtime section), dash when there is no ORT figure.
func ortCells(in Input, es []entry, e entry) (ms, vs string) {
	if t, ok := ortFor(es, e); ok {
		return fmtMs(t.MedianNs), speedupCell(t, e)
	}
	if ortCompares(e.Backend) {
		for _, n := range in.ortNotRun() {
			if n.Case == e.Case && n.batch == e.Batch && n.threads == e.Threads && n.machine == e.machine {
				return "NS", "NS"
			}
		}
	}
	return dash, dash
}

// writeOrt writes the ONNX Runtime section: what code the ORT figures ran (the labels
// bench_ort.js records) and every case ORT did not run, with the reason.
func writeOrt(w io.Writer, in Input, es []entry) error {
	if !in.hasOrt(es) {
		return nil
	}
	var labels []string
	for _, e := range es {
		if e.Backend == OrtBackend && e.Baseline != "" {
			labels = appendNew(labels, e.Baseline)
		}
	}
	section(w, "ONNX Runtime baseline",
		"The ORT columns above: each case's reference module exported to ONNX (reference/onnx_export.py) and timed by "+
			"reference/bench_ort.js under PyTorch's protocol, same machine, batch and thread count; vs ORT = ORT median / ours.")
	for _, l := range labels {
		fmt.Fprintf(w, "- ran: %s\n", Inline(l))
	}
	ns := in.ortNotRun()
	if len(ns) == 0 {
		return nil
	}
	if len(labels) > 0 {
		fmt.Fprintln(w)
	}
	var cells [][]string
	for _, n := range ns {
		cells = append(cells, []string{n.Case, fmt.Sprint(n.batch), fmt.Sprint(n.threads), "NS", n.reason})
	}
	fmt.Fprintf(w, "Cases ONNX Runtime did not run (NS):\n\n")
	return writeTable(w, "lrrll", []string{"case", "batch", "threads", "status", "reason"}, cells)
}
