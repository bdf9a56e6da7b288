package results

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// unitLines declares the direction and statistical assumption of vitbench's units for
// benchstat (FORMAT.md).
var unitLines = []string{
	"Unit GFLOP/s better=higher",
	"Unit GB/s better=higher",
	"Unit MACs/op assume=exact better=lower",
	"Unit B/peak assume=exact better=lower",
	"Unit B/rss better=lower",
}

// WriteBenchText writes f in the Go benchmark format (FORMAT.md): Meta as config lines, the
// Unit lines, then one result line per sample:
//
//	Benchmark_<case>/backend=B/batch=N/threads=T/dtype=D 1 <ns> ns/op [<e2e> e2e-ns/op]
//	    [GFLOP/s] [GB/s] [MACs/op] [B/peak] [B/rss]
//
// GFLOP/s and MACs/op appear when MACs > 0, GB/s when Bytes > 0, B/peak and B/rss when
// non-zero. An "isa:" line precedes each row whose effective ISA differs from the previous one.
// Throughputs are printed with just enough digits for ReadBench to recover Bytes exactly.
func WriteBenchText(w io.Writer, f BenchFile) error {
	bw := bufio.NewWriter(w)
	if err := writeConfig(bw, f.Meta); err != nil {
		return err
	}
	for _, u := range unitLines {
		fmt.Fprintln(bw, u)
	}
	// Meta.ISA is written even when the first row overrides it, so that it reads back.
	isa := oneLine(f.Meta.ISA)
	if isa != "" {
		fmt.Fprintf(bw, "%s: %s\n", keyISA, isa)
	}
	for i, r := range f.Rows {
		if err := checkName(r); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		if e := oneLine(r.EffectiveISA(f.Meta)); e != isa {
			fmt.Fprintf(bw, "%s: %s\n", keyISA, e)
			isa = e
		}
		if len(r.E2ESamplesNs) != 0 && len(r.E2ESamplesNs) != len(r.SamplesNs) {
			return fmt.Errorf("row %d (%s): %d e2e samples for %d samples", i, r.Case, len(r.E2ESamplesNs), len(r.SamplesNs))
		}
		name := benchName(r)
		for j, ns := range r.SamplesNs {
			writeSample(bw, name, r, j, ns)
		}
	}
	for i, f := range f.Failed {
		if err := checkName(BenchRow{Case: f.Case}); err != nil {
			return fmt.Errorf("failure %d: %w", i, err)
		}
		fmt.Fprintln(bw, failureLine(f))
	}
	return bw.Flush()
}

// writeConfig writes the Meta config lines: the known keys, then Extra sorted by key.
func writeConfig(w io.Writer, m Meta) error {
	vals := map[string]string{
		keyGOOS: m.GOOS, keyGOARCH: m.GOARCH, keyCPU: m.CPU, keyTool: m.Tool,
		keyCommit: m.Commit, keyDate: m.Date, keyMachine: m.Machine,
	}
	if m.Threads != 0 {
		vals[keyThreads] = strconv.Itoa(m.Threads)
	}
	for _, k := range metaKeys {
		if v := oneLine(vals[k]); v != "" {
			fmt.Fprintf(w, "%s: %s\n", k, v)
		}
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !validConfigKey(k) {
			return fmt.Errorf("meta extra key %q: a config key starts with a lower-case letter and has no spaces or upper-case letters", k)
		}
		if isMetaKey(k) {
			return fmt.Errorf("meta extra key %q duplicates a Meta field", k)
		}
		if v := oneLine(m.Extra[k]); v != "" {
			fmt.Fprintf(w, "%s: %s\n", k, v)
		}
	}
	return nil
}

// writeSample writes the result line of sample j of r.
func writeSample(w io.Writer, name string, r BenchRow, j int, ns float64) {
	fmt.Fprintf(w, "%s\t1\t%s ns/op", name, fmtNum(ns))
	if len(r.E2ESamplesNs) > 0 {
		fmt.Fprintf(w, "\t%s e2e-ns/op", fmtNum(r.E2ESamplesNs[j]))
	}
	if r.MACs > 0 {
		fmt.Fprintf(w, "\t%s GFLOP/s", fmtRate(2*float64(r.MACs), ns))
	}
	if r.Bytes > 0 {
		fmt.Fprintf(w, "\t%s GB/s", fmtRate(float64(r.Bytes), ns))
	}
	if r.MACs > 0 {
		fmt.Fprintf(w, "\t%d MACs/op", r.MACs)
	}
	if r.PeakBytes != 0 {
		fmt.Fprintf(w, "\t%d B/peak", r.PeakBytes)
	}
	if r.RSSBytes != 0 {
		fmt.Fprintf(w, "\t%d B/rss", r.RSSBytes)
	}
	fmt.Fprintln(w)
}

// benchName returns "Benchmark_<case>/backend=B/batch=N/threads=T/dtype=D".
func benchName(r BenchRow) string {
	return fmt.Sprintf("Benchmark_%s/backend=%s/batch=%d/threads=%d/dtype=%s", r.Case, r.Backend, r.Batch, r.Threads, r.DType)
}

// checkName reports why r's name parts cannot be written so that they read back unchanged.
func checkName(r BenchRow) error {
	if r.Case == "" || strings.IndexFunc(r.Case, unicode.IsSpace) >= 0 {
		return fmt.Errorf("case %q: must be non-empty without spaces", r.Case)
	}
	for _, p := range strings.Split(r.Case, "/") {
		if strings.Contains(p, "=") {
			return fmt.Errorf("case %q: a case name part may not contain '=' (it would read as a key)", r.Case)
		}
	}
	for _, v := range []string{r.Backend, r.DType} {
		if strings.IndexFunc(v, unicode.IsSpace) >= 0 || strings.Contains(v, "/") {
			return fmt.Errorf("case %q: backend/dtype %q may not contain spaces or '/'", r.Case, v)
		}
	}
	return nil
}

// fmtNum formats v exactly (shortest round-trip form, no exponent for ordinary times).
func fmtNum(v float64) string {
	if math.Abs(v) >= 1e21 || (v != 0 && math.Abs(v) < 1e-6) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// fmtRate formats amount/ns (giga-amount per second) with the fewest significant digits
// (at least 4) from which round(rate·ns) gives amount back exactly.
func fmtRate(amount, ns float64) string {
	rate := amount / ns
	for prec := 4; prec < 17; prec++ {
		s := strconv.FormatFloat(rate, 'g', prec, 64)
		back, err := strconv.ParseFloat(s, 64)
		if err == nil && math.Round(back*ns) == amount {
			return s
		}
	}
	return strconv.FormatFloat(rate, 'g', -1, 64)
}

// oneLine replaces line breaks so a value stays on its config line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(strings.TrimSpace(s))
}

// validConfigKey reports whether k parses as a benchfmt config key: it starts with a
// lower-case letter and holds no spaces, upper-case letters or colons.
func validConfigKey(k string) bool {
	for i, r := range k {
		if i == 0 && !unicode.IsLower(r) {
			return false
		}
		if unicode.IsSpace(r) || unicode.IsUpper(r) || r == ':' {
			return false
		}
	}
	return k != ""
}

// isMetaKey reports whether k is written from a Meta field rather than Extra.
func isMetaKey(k string) bool {
	return k == keyISA || slices.Contains(metaKeys, k)
}
