package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"

	"vitbench/bench"
	"vitbench/bench/cases"
)

// caseListing is one row of `vitbench list`.
type caseListing struct {
	Name      string          `json:"name"`
	Kind      string          `json:"kind"`
	Op        string          `json:"op"`
	Batch     int             `json:"batch"`
	Params    int64           `json:"params"`
	MACs      int64           `json:"macs"`
	Bytes     int64           `json:"bytes"`
	Tolerance string          `json:"tolerance"`
	HyperPar  json.RawMessage `json:"hyper_params"`
}

func cmdList(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("list", stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	runRE := fs.String("run", "", "only cases whose name matches this regular expression")
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	re, err := compileRun(*runRE)
	if err != nil {
		return exitUsage, err
	}
	var rows []caseListing
	for _, c := range cases.Match(re) {
		s, err := c.Spec(0)
		if err != nil {
			return exitFail, err
		}
		rows = append(rows, caseListing{Name: c.Name, Kind: c.Kind, Op: c.Op, Batch: c.Batch,
			Params: s.Params(), MACs: s.MACs(), Bytes: s.Bytes(), Tolerance: c.Tolerance, HyperPar: c.Params})
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return exitOK, enc.Encode(map[string]any{"cases": rows, "op_kinds": opKinds()})
	}
	t := newTable(stdout, "case", "kind", "op", "batch", "params", "MACs", "bytes", "tolerance")
	for _, r := range rows {
		t.Append(r.Name, r.Kind, r.Op, fmt.Sprint(r.Batch), fmt.Sprint(r.Params), human(r.MACs), human(r.Bytes), r.Tolerance)
	}
	if err := t.Render(); err != nil {
		return exitFail, err
	}
	fmt.Fprintln(stdout, "\nop kinds:")
	for _, k := range opKinds() {
		fmt.Fprintf(stdout, "  %-12s %s\n", k["name"], k["summary"])
	}
	return exitOK, nil
}

func opKinds() []map[string]string {
	var out []map[string]string
	for _, n := range bench.OpKindNames() {
		k, _ := bench.LookupOpKind(n)
		out = append(out, map[string]string{"name": n, "summary": k.Summary()})
	}
	return out
}

func compileRun(s string) (*regexp.Regexp, error) {
	if s == "" {
		return nil, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, usagef("-run: %v", err)
	}
	return re, nil
}

// human formats a count with an SI suffix: 115.6M.
func human(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
