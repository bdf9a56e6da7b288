package results

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// readBenchText parses the Go benchmark format (vitbench's own files and plain `go test
// -bench` output). Result lines are grouped into rows by full benchmark name and isa
// config value, in order of first appearance; each line is one sample.
//
// A name's parts map to the row as follows: /backend=, /batch=, /threads=, /dtype= set those
// fields; every other part, in order, forms the case name (see parseName for the first
// part's spelling), so distinct benchmarks never merge. The iteration count is the number
// of runs averaged into the sample (Runs; nil when every count is 1). Missing keys fall back
// to the "backend" and "threads" config keys and the -N GOMAXPROCS suffix (threads); batch
// and threads are 0 when unknown.
//
// Units are tidied by benchfmt (ns/op -> sec/op); the original ns values are used so nothing
// is lost. Peak bytes are B/op (B/peak in older files); Bytes is moved-B/op, or in older
// files recovered from GB/s (or go test's MB/s) and the sample's time. When a
// row has no MACs/op but its lines report GFLOP/s, GFLOPs is the median of those values.
func readBenchText(data []byte, file string) (BenchFile, error) {
	meta, err := scanMeta(data, file)
	if err != nil {
		return BenchFile{}, err
	}
	rd := benchfmt.NewReader(bytes.NewReader(data), file)
	var groups []*rowAcc
	index := map[string]*rowAcc{}
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			return BenchFile{}, rec
		case *benchfmt.Result:
			key := string(rec.Name.Full()) + "\x00" + rec.GetConfig(keyISA)
			acc := index[key]
			if acc == nil {
				acc, err = newRowAcc(rec)
				if err != nil {
					return BenchFile{}, err
				}
				index[key] = acc
				groups = append(groups, acc)
			}
			if err := acc.add(rec); err != nil {
				return BenchFile{}, err
			}
		}
	}
	if err := rd.Err(); err != nil {
		return BenchFile{}, err
	}
	failed, err := readFailures(data, file)
	if err != nil {
		return BenchFile{}, err
	}
	if len(groups) == 0 && len(failed) == 0 {
		return BenchFile{}, fmt.Errorf("%s: no benchmark results", file)
	}
	f := BenchFile{Meta: meta, Rows: make([]BenchRow, len(groups)), Failed: failed}
	for i, g := range groups {
		f.Rows[i] = g.row()
	}
	if err := readBaselines(&f, data, file); err != nil {
		return BenchFile{}, err
	}
	if err := applyLoads(f.Rows, data, file); err != nil {
		return BenchFile{}, err
	}
	return f, nil
}

// rowAcc accumulates the samples of one row while reading.
type rowAcc struct {
	caseName, backend, dtype, isa string
	batch, threads                int
	macs, bytes, peak, rss        int64
	haveBytes                     bool
	ns, e2e, gflops               []float64
	runs                          []int
}

// newRowAcc starts a row from the name and config of its first result.
func newRowAcc(res *benchfmt.Result) (*rowAcc, error) {
	file, line := res.Pos()
	acc := &rowAcc{isa: res.GetConfig(keyISA), backend: res.GetConfig(keyBackend)}
	f, err := parseName(res.Name, fmt.Sprintf("%s:%d", file, line))
	if err != nil {
		return nil, err
	}
	acc.caseName, acc.dtype, acc.batch, acc.threads = f.caseName, f.dtype, f.batch, f.threads
	if f.hasBackend {
		acc.backend = f.backend
	}
	if !f.hasThreads {
		acc.threads = f.procs
		if t, err := strconv.Atoi(res.GetConfig(keyThreads)); f.procs == 0 && err == nil {
			acc.threads = t
		}
	}
	return acc, nil
}

// nameFields are what a benchmark name says about its row.
type nameFields struct {
	caseName, backend, dtype string
	batch, threads, procs    int
	hasBackend, hasThreads   bool
}

// parseName maps the parts of a benchmark name (without "Benchmark") to
// row fields: /backend=, /batch=, /threads=, /dtype= set those, a -N
// suffix is GOMAXPROCS (procs), and every other part, in order, forms the
// case name. Its first part is spelled as benchName writes it: a leading
// "_" is dropped ("Benchmark_<case>", all older files), else, in a name
// with a /backend= part (one vitbench or bench_torch.py wrote), a leading
// upper-case ASCII letter is lower-cased ("BenchmarkPatch_embed/…" is
// patch_embed); go test's own names ("BenchmarkFoo-8") are kept as they
// are. where (file:line) prefixes the error for a non-integer batch,
// threads or -N.
func parseName(name benchfmt.Name, where string) (nameFields, error) {
	var f nameFields
	var caseParts []string
	base, parts := name.Parts()
	first := string(base)
	atoi := func(k, v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %s=%q in benchmark name: not an integer", where, k, v)
		}
		return n, nil
	}
	for _, p := range parts {
		ps := string(p)
		if strings.HasPrefix(ps, "-") {
			n, err := atoi("GOMAXPROCS suffix", ps[1:])
			if err != nil {
				return f, err
			}
			f.procs = n
			continue
		}
		ps = strings.TrimPrefix(ps, "/")
		k, v, _ := strings.Cut(ps, "=")
		var err error
		switch k {
		case "backend":
			f.backend, f.hasBackend = v, true
		case "dtype":
			f.dtype = v
		case "batch":
			f.batch, err = atoi(k, v)
		case "threads":
			f.threads, err = atoi(k, v)
			f.hasThreads = true
		default:
			caseParts = append(caseParts, ps)
		}
		if err != nil {
			return f, err
		}
	}
	switch {
	case strings.HasPrefix(first, "_"):
		first = first[1:]
	case f.hasBackend && first != "" && first[0] >= 'A' && first[0] <= 'Z':
		first = strings.ToLower(first[:1]) + first[1:]
	}
	f.caseName = strings.Join(append([]string{first}, caseParts...), "/")
	return f, nil
}

// add records one result line as a sample.
func (a *rowAcc) add(res *benchfmt.Result) error {
	file, line := res.Pos()
	ns, haveNs := math.NaN(), false
	e2eBefore := len(a.e2e)
	var gbps, bps float64
	for _, v := range res.Values {
		switch {
		case v.OrigUnit == "ns/op":
			ns, haveNs = v.OrigValue, true
		case v.Unit == "sec/op":
			ns, haveNs = v.Value*1e9, true
		case v.OrigUnit == "e2e-ns/op" || v.Unit == "e2e-ns/op":
			a.e2e = append(a.e2e, origValue(v))
		case v.Unit == "GFLOP/s":
			a.gflops = append(a.gflops, v.Value)
		case v.Unit == "GB/s":
			gbps = v.Value
		case v.Unit == "B/s":
			bps = v.Value
		case v.Unit == unitMACs:
			a.macs = int64(v.Value)
		case v.Unit == unitPeak || v.Unit == unitOldPeak:
			a.peak = max(a.peak, int64(v.Value))
		case v.Unit == unitMoved:
			a.bytes, a.haveBytes = int64(v.Value), true
		case v.Unit == "B/rss":
			a.rss = max(a.rss, int64(v.Value))
		}
	}
	if !haveNs {
		return fmt.Errorf("%s:%d: %s: no ns/op measurement", file, line, res.Name)
	}
	if err := checkSamples("ns/op", []float64{ns}); err != nil {
		return fmt.Errorf("%s:%d: %s: %v", file, line, res.Name, err)
	}
	if err := checkSamples("e2e-ns/op", a.e2e[min(e2eBefore, len(a.e2e)):]); err != nil {
		return fmt.Errorf("%s:%d: %s: %v", file, line, res.Name, err)
	}
	for _, v := range res.Values {
		if v.Value < 0 || math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			return fmt.Errorf("%s:%d: %s: %v %s is not a measurement (negative, NaN or infinite)", file, line, res.Name, v.Value, v.Unit)
		}
	}
	if res.Iters < 1 {
		return fmt.Errorf("%s:%d: %s: iteration count %d: a sample averages at least one run", file, line, res.Name, res.Iters)
	}
	a.ns = append(a.ns, ns)
	a.runs = append(a.runs, res.Iters)
	if !a.haveBytes {
		switch {
		case gbps > 0:
			a.bytes, a.haveBytes = int64(math.Round(gbps*ns)), true
		case bps > 0:
			a.bytes, a.haveBytes = int64(math.Round(bps*ns*1e-9)), true
		}
	}
	return nil
}

// origValue returns the value as written in the file, before benchfmt tidied it.
func origValue(v benchfmt.Value) float64 {
	if v.OrigUnit != "" {
		return v.OrigValue
	}
	return v.Value
}

// row builds the BenchRow with its summary.
func (a *rowAcc) row() BenchRow {
	var e2e []float64
	if len(a.e2e) > 0 {
		e2e = a.e2e
	}
	r := NewBenchRow(a.caseName, a.backend, a.batch, a.threads, a.dtype, a.macs, a.bytes, a.peak, a.rss, a.ns, e2e)
	r.ISA = a.isa
	if slices.ContainsFunc(a.runs, func(n int) bool { return n != 1 }) {
		r.Runs = a.runs
	}
	if a.macs == 0 && len(a.gflops) > 0 {
		r.GFLOPs = Summarize(a.gflops).Median
	}
	return r
}

// scanMeta builds Meta from the first non-empty value of each config line in data, comment
// config lines ("# key: value", WriteBenchText's volatile keys) included.
func scanMeta(data []byte, file string) (Meta, error) {
	var m Meta
	seen := map[string]bool{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		// "# key: value" is a config line benchstat ignores (volatile keys: commit, date).
		text, _ := strings.CutPrefix(string(bytes.TrimRight(line, "\r")), "# ")
		k, v, ok := parseConfigLine(text)
		if !ok || v == "" || seen[k] {
			continue
		}
		seen[k] = true
		switch k {
		case keyTool:
			m.Tool = v
		case keyCommit:
			m.Commit = v
		case keyDate:
			m.Date = v
		case keyCPU:
			m.CPU = v
		case keyISA:
			m.ISA = v
		case keyGOOS:
			m.GOOS = v
		case keyGOARCH:
			m.GOARCH = v
		case keyMachine:
			m.Machine = v
		case keyThreads:
			n, err := strconv.Atoi(v)
			if err != nil {
				return Meta{}, fmt.Errorf("%s:%d: threads: %q is not an integer", file, i+1, v)
			}
			m.Threads = n
		default:
			if m.Extra == nil {
				m.Extra = map[string]string{}
			}
			m.Extra[k] = v
		}
	}
	return m, nil
}

// parseConfigLine parses "key: value" by benchfmt's rules: the key starts with a lower-case
// letter and holds no spaces or upper-case letters; spaces or tabs follow the colon.
func parseConfigLine(line string) (key, val string, ok bool) {
	k, v, found := strings.Cut(line, ":")
	if !found || !validConfigKey(k) {
		return "", "", false
	}
	if v == "" {
		return k, "", true
	}
	if v[0] != ' ' && v[0] != '\t' {
		return "", "", false
	}
	return k, strings.TrimSpace(v), true
}
