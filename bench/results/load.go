package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// RowLoad is the CPU time other processes took while a row was timed (package contention):
// Foreign is their share of the machine's capacity over the timing window (NaN: not
// measured), Contended says it was over the threshold. Retimed marks a row `vitbench run`
// timed a second time because its group was contended (or its CPUs moved); FirstForeign is
// then the first attempt's load (the row's samples are the second attempt's). RoundTripNs is
// the cross-CPU cache-line round trip probed around the row's timing (the larger of the
// probes before and after it; 0: not probed) and CoresMoved says those probes disagreed by
// more than contention.Moved, so the CPUs' cache arrangement changed while the row was
// timed (package contention, ProbeRoundTrip).
type RowLoad struct {
	Foreign        float64
	Contended      bool
	Retimed        bool
	FirstForeign   float64
	FirstContended bool
	RoundTripNs    float64
	CoresMoved     bool
}

// loadPrefix starts a row's load line in the text format, a comment benchstat ignores:
//
//	# load Benchmark<Case>/backend=B/batch=N/threads=T/dtype=D: <foreign> [contended] [retimed <first> [contended]] [rtt <ns>] [moved]
const loadPrefix = "# load "

// LoadLine is r's load line in the text format; "" when the row has no load record. A later
// line for the same row replaces an earlier one when read (`run` appends the re-time's).
func LoadLine(r BenchRow) string { return loadLine(r) }

// loadLine is r's load line; "" when the row has no load record.
func loadLine(r BenchRow) string {
	l := r.Load
	if l == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s: %s", loadPrefix, benchName(r), loadNum(l.Foreign))
	if l.Contended {
		b.WriteString(" contended")
	}
	if l.Retimed {
		fmt.Fprintf(&b, " retimed %s", loadNum(l.FirstForeign))
		if l.FirstContended {
			b.WriteString(" contended")
		}
	}
	if l.RoundTripNs > 0 {
		fmt.Fprintf(&b, " rtt %s", strconv.FormatFloat(l.RoundTripNs, 'f', 0, 64))
	}
	if l.CoresMoved {
		b.WriteString(" moved")
	}
	return b.String()
}

// loadNum formats a load with 3 decimals, "null" when not measured.
func loadNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "null"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// parseLoadNum reads what loadNum writes.
func parseLoadNum(s string) (float64, error) {
	if s == "null" {
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		return 0, fmt.Errorf("load %q is not a number in [0, 1] or null", s)
	}
	return v, nil
}

// parseLoadLine reads a line written by loadLine; ok is false for any other line.
func parseLoadLine(line, where string) (key rowKey, l RowLoad, ok bool, err error) {
	rest, found := strings.CutPrefix(line, loadPrefix)
	if !found || !strings.HasPrefix(rest, "Benchmark") {
		return key, l, false, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%s: malformed load line %q: %s (want %sBenchmark<Case>/…: <load> [contended] [retimed <load> [contended]] [rtt <ns>] [moved])", where, line, why, loadPrefix)
	}
	name, vals, found := strings.Cut(rest, ": ")
	if !found {
		return key, l, true, bad("no ': '")
	}
	nf, err := parseName(benchfmt.Name(strings.TrimPrefix(name, "Benchmark")), where)
	if err != nil {
		return key, l, true, err
	}
	f := strings.Fields(vals)
	if len(f) == 0 {
		return key, l, true, bad("no load")
	}
	if l.Foreign, err = parseLoadNum(f[0]); err != nil {
		return key, l, true, bad(err.Error())
	}
	f = f[1:]
	if len(f) > 0 && f[0] == "contended" {
		l.Contended, f = true, f[1:]
	}
	if len(f) > 0 && f[0] == "retimed" {
		if len(f) < 2 {
			return key, l, true, bad("retimed without the first attempt's load")
		}
		l.Retimed = true
		if l.FirstForeign, err = parseLoadNum(f[1]); err != nil {
			return key, l, true, bad(err.Error())
		}
		f = f[2:]
		if len(f) > 0 && f[0] == "contended" {
			l.FirstContended, f = true, f[1:]
		}
	}
	if len(f) > 0 && f[0] == "rtt" {
		if len(f) < 2 {
			return key, l, true, bad("rtt without the round trip in nanoseconds")
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return key, l, true, bad(fmt.Sprintf("rtt %q is not a positive number of nanoseconds", f[1]))
		}
		l.RoundTripNs, f = v, f[2:]
	}
	if len(f) > 0 && f[0] == "moved" {
		l.CoresMoved, f = true, f[1:]
	}
	if len(f) > 0 {
		return key, l, true, bad("unexpected " + strings.Join(f, " "))
	}
	return rowKey{nf.caseName, nf.backend, nf.batch, nf.threads, nf.dtype}, l, true, nil
}

// ParseBench reads a timing file's content (ReadBench without the file); name is used in
// error messages.
func ParseBench(data []byte, name string) (BenchFile, error) { return parseBench(data, name) }

// rowKey identifies a row across the lines of a text file.
type rowKey struct {
	caseName, backend string
	batch, threads    int
	dtype             string
}

// applyLoads reads the load lines of data and attaches each to the row it names; a line
// naming no row is ignored (its row may have failed), a malformed one is an error naming
// the file and line.
func applyLoads(rows []BenchRow, data []byte, file string) error {
	index := map[rowKey][]int{}
	for i, r := range rows {
		k := rowKey{r.Case, r.Backend, r.Batch, r.Threads, r.DType}
		index[k] = append(index[k], i)
	}
	for n, line := range strings.Split(string(data), "\n") {
		k, l, ok, err := parseLoadLine(strings.TrimRight(line, "\r"), fmt.Sprintf("%s:%d", file, n+1))
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		for _, i := range index[k] {
			cp := l
			rows[i].Load = &cp
		}
	}
	return nil
}

// ContendedRows counts the rows of f timed under a contended load.
func ContendedRows(rows []BenchRow) int {
	n := 0
	for _, r := range rows {
		if r.Load != nil && r.Load.Contended {
			n++
		}
	}
	return n
}
