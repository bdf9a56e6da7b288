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

	"golang.org/x/perf/benchfmt"
)

// Units of the text format beyond ns/op (FORMAT.md).
const (
	unitPeak     = "B/op"       // allocator peak bytes of one run (deterministic)
	unitMoved    = "moved-B/op" // bytes one run moves, counted from the shapes (deterministic)
	unitOldPeak  = "B/peak"     // the peak bytes' unit before moved-B/op and B/op (read only)
	unitMACs     = "MACs/op"
	unitRSS      = "B/rss"
	unitGFLOPs   = "GFLOP/s"
	unitGBps     = "GB/s"
	unitE2E      = "e2e-ns/op"
	unitNsPerRun = "ns/op"
)

// unitMeta declares the direction and statistical assumption of vitbench's units for
// benchstat: deterministic counts are exact (benchstat warns when their samples differ).
var unitMeta = [][3]string{
	{unitGFLOPs, "better", "higher"},
	{unitGBps, "better", "higher"},
	{unitMACs, "assume", "exact"}, {unitMACs, "better", "lower"},
	{unitPeak, "assume", "exact"}, {unitPeak, "better", "lower"},
	{unitMoved, "assume", "exact"}, {unitMoved, "better", "lower"},
	{unitRSS, "better", "lower"},
}

// commentKeys are the Meta config keys that differ between two runs of the same setup
// (commit, date, a partial run's note): they are written as "# key: value" comment lines,
// which benchstat ignores, so that they never split its tables; ReadBench reads them back.
var commentKeys = []string{keyCommit, keyDate, PartialKey}

// WriteBenchText writes f in the Go benchmark format (FORMAT.md) with benchfmt's Writer:
// the volatile Meta keys as comment lines, the Unit lines, then one result line per sample,
// after the config lines (the other Meta keys and the row's isa) it differs in:
//
//	Benchmark<Case>/backend=B/batch=N/threads=T/dtype=D <runs> <ns> ns/op [<e2e> e2e-ns/op]
//	    [GFLOP/s] [GB/s] [MACs/op] [B/op] [moved-B/op] [B/rss]
//
// <runs> is how many runs were averaged into the sample; GFLOP/s and MACs/op appear when
// MACs > 0, GB/s and moved-B/op when Bytes > 0, B/op (allocator peak) and B/rss when
// non-zero.
func WriteBenchText(w io.Writer, f BenchFile) error {
	bw := bufio.NewWriter(w)
	cfg, err := fileConfig(f.Meta)
	if err != nil {
		return err
	}
	for _, k := range commentKeys {
		if v := oneLine(commentValue(f.Meta, k)); v != "" {
			fmt.Fprintf(bw, "# %s: %s\n", k, v)
		}
	}
	isa := oneLine(f.Meta.ISA)
	if len(f.Rows) > 0 && isa != "" && oneLine(f.Rows[0].EffectiveISA(f.Meta)) != isa {
		// The file's own ISA still reads back when its first row overrides it.
		fmt.Fprintf(bw, "# %s: %s\n", keyISA, isa)
	}
	bf := benchfmt.NewWriter(bw)
	for _, u := range unitMeta {
		if err := bf.Write(&benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: u[0], Key: u[1]}, OrigUnit: u[0], Value: u[2]}); err != nil {
			return err
		}
	}
	for i, r := range f.Rows {
		if err := checkName(r); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		if len(r.E2ESamplesNs) != 0 && len(r.E2ESamplesNs) != len(r.SamplesNs) {
			return fmt.Errorf("row %d (%s): %d e2e samples for %d samples", i, r.Case, len(r.E2ESamplesNs), len(r.SamplesNs))
		}
		res := &benchfmt.Result{Config: rowConfig(cfg, oneLine(r.EffectiveISA(f.Meta))), Name: benchfmt.Name(benchName(r)[len("Benchmark"):])}
		for j, ns := range r.SamplesNs {
			res.Iters = r.RunsOf(j)
			res.Values = sampleValues(r, j, ns)
			if err := bf.Write(res); err != nil {
				return err
			}
		}
		if l := loadLine(r); l != "" {
			fmt.Fprintln(bw, l)
		}
	}
	if len(f.Rows) == 0 {
		// benchfmt writes config lines with results only; keep the provenance anyway.
		for _, c := range cfg {
			fmt.Fprintf(bw, "%s: %s\n", c.Key, c.Value)
		}
	}
	for _, r := range f.Rows {
		if r.Baseline != "" {
			fmt.Fprintln(bw, baselineLine(r))
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

// commentValue returns the value of comment key k in m.
func commentValue(m Meta, k string) string {
	switch k {
	case keyCommit:
		return m.Commit
	case keyDate:
		return m.Date
	}
	return m.Extra[k]
}

// fileConfig returns the config lines of m that are not comments: the known keys in
// metaKeys order, then Extra sorted by key (an invalid or duplicate key is an error).
func fileConfig(m Meta) ([]benchfmt.Config, error) {
	vals := map[string]string{
		keyGOOS: m.GOOS, keyGOARCH: m.GOARCH, keyCPU: m.CPU, keyTool: m.Tool, keyMachine: m.Machine,
		keyCommit: m.Commit, keyDate: m.Date,
	}
	if m.Threads != 0 {
		vals[keyThreads] = strconv.Itoa(m.Threads)
	}
	var out []benchfmt.Config
	add := func(k, v string) {
		if v = oneLine(v); v != "" {
			out = append(out, benchfmt.Config{Key: k, Value: []byte(v), File: true})
		}
	}
	for _, k := range metaKeys {
		if !slices.Contains(commentKeys, k) {
			add(k, vals[k])
		}
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !validConfigKey(k) {
			return nil, fmt.Errorf("meta extra key %q: a config key starts with a lower-case letter and has no spaces or upper-case letters", k)
		}
		if isMetaKey(k) {
			return nil, fmt.Errorf("meta extra key %q duplicates a Meta field", k)
		}
		if !slices.Contains(commentKeys, k) {
			add(k, m.Extra[k])
		}
	}
	return out, nil
}

// rowConfig returns the file config with the row's isa last ("" leaves it out).
func rowConfig(cfg []benchfmt.Config, isa string) []benchfmt.Config {
	out := slices.Clone(cfg)
	if isa != "" {
		out = append(out, benchfmt.Config{Key: keyISA, Value: []byte(isa), File: true})
	}
	return out
}

// sampleValues returns the measurements of sample j of r (ns per run) in the order
// WriteBenchText documents.
func sampleValues(r BenchRow, j int, ns float64) []benchfmt.Value {
	vals := []benchfmt.Value{{Value: ns, Unit: unitNsPerRun}}
	if len(r.E2ESamplesNs) > 0 {
		vals = append(vals, benchfmt.Value{Value: r.E2ESamplesNs[j], Unit: unitE2E})
	}
	if r.MACs > 0 {
		vals = append(vals, benchfmt.Value{Value: rate(2*float64(r.MACs), ns), Unit: unitGFLOPs})
	}
	if r.Bytes > 0 {
		vals = append(vals, benchfmt.Value{Value: rate(float64(r.Bytes), ns), Unit: unitGBps})
	}
	if r.MACs > 0 {
		vals = append(vals, benchfmt.Value{Value: float64(r.MACs), Unit: unitMACs})
	}
	if r.PeakBytes != 0 {
		vals = append(vals, benchfmt.Value{Value: float64(r.PeakBytes), Unit: unitPeak})
	}
	if r.Bytes > 0 {
		vals = append(vals, benchfmt.Value{Value: float64(r.Bytes), Unit: unitMoved})
	}
	if r.RSSBytes != 0 {
		vals = append(vals, benchfmt.Value{Value: float64(r.RSSBytes), Unit: unitRSS})
	}
	return vals
}

// benchName returns "Benchmark<Case>/backend=B/batch=N/threads=T/dtype=D", where <Case> is
// the case name with its first letter upper-cased when it is an ASCII lower-case letter (Go's
// BenchmarkXxx form: benchstat shows "Patch_embed/vit_b16/…"), and "_" + the case name
// otherwise, so that the reader gets the name back exactly.
func benchName(r BenchRow) string {
	c := "_" + r.Case
	if r.Case != "" && r.Case[0] >= 'a' && r.Case[0] <= 'z' {
		c = strings.ToUpper(r.Case[:1]) + r.Case[1:]
	}
	return fmt.Sprintf("Benchmark%s/backend=%s/batch=%d/threads=%d/dtype=%s", c, r.Backend, r.Batch, r.Threads, r.DType)
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

// rate returns amount/ns (giga-amount per second) rounded to the fewest significant digits
// (at least 4) that keep round(rate·ns) = amount, so that files stay short.
func rate(amount, ns float64) float64 {
	r := amount / ns
	for prec := 4; prec < 17; prec++ {
		back, err := strconv.ParseFloat(strconv.FormatFloat(r, 'g', prec, 64), 64)
		if err == nil && math.Round(back*ns) == amount {
			return back
		}
	}
	return r
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
