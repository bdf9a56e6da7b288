package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchJSON is a timing file with case a's samples and, when more is given, more rows.
func benchJSON(samples, more string) string {
	s := `{"meta": {"tool": "vitbench"},
"rows": [
{"case": "a", "backend": "cpu", "batch": 1, "threads": 2, "dtype": "float32", "samples_ns": ` + samples + `}`
	if more != "" {
		s += ",\n" + more
	}
	return s + "\n]}\n"
}

// TestHostileNaNSamples: one NaN timing sample used to send the Mann–Whitney test into an
// allocating loop (4 GiB in 6 s) in compare, report and report -base. NaN, ±Inf, negative
// and zero samples, in JSON and in the text format, are rejected when the file is read,
// naming the file and the line (exit 2), in a moment.
func TestHostileNaNSamples(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(benchJSON("[100, 110, 120]", "")), 0o644)
	bad := map[string]string{
		"nan.json":  benchJSON(`[100, "NaN", 120]`, ""),
		"inf.json":  benchJSON(`[100, "+Inf", 120]`, ""),
		"neg.json":  benchJSON(`[100, -5, 120]`, ""),
		"zero.json": benchJSON(`[100, 0, 120]`, ""),
		"nan.txt": "goos: linux\nBenchmark_a/backend=cpu/batch=1/threads=2/dtype=float32\t1\t100 ns/op\n" +
			"Benchmark_a/backend=cpu/batch=1/threads=2/dtype=float32\t1\tNaN ns/op\n",
	}
	wantLine := map[string]string{"nan.json": ":3:", "inf.json": ":3:", "neg.json": ":3:", "zero.json": ":3:", "nan.txt": ":3:"}
	for name, content := range bad {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		cmds := [][]string{{"compare", good, p}}
		if strings.HasPrefix(name, "nan") { // every command that used to loop, for NaN
			cmds = append(cmds, []string{"compare", p, good}, []string{"report", p}, []string{"report", "-base", p, good})
		}
		for _, args := range cmds {
			r := runHostile(t, runOpts{dir: dir, timeout: 10e9}, args...)
			wantExit(t, r, 2, args...)
			wantIn(t, name, r.stderr, p+wantLine[name], "a timing sample must be a positive, finite number of nanoseconds")
		}
	}
}

// TestHostileResultRows: results with an unknown status, duplicate rows or negative times
// used to be accepted silently; each is an error naming the file and line (exit 2).
func TestHostileResultRows(t *testing.T) {
	dir := t.TempDir()
	files := map[string]struct{ content, want string }{
		"status.json": {`{"meta": {},
"rows": [
{"case": "a", "backend": "cpu", "dtype": "float32", "status": "OK"},
{"case": "b", "backend": "cpu", "dtype": "float32", "status": "PASSED"}
]}`, `status.json:4: row 1 (b backend=cpu dtype=float32): status "PASSED" is not OK, FAIL or NS`},
		"dup.json": {benchJSON("[100, 110, 120]", `{"case": "a", "backend": "cpu", "batch": 1, "threads": 2, "dtype": "float32", "n": 1, "samples_ns": [5]}`),
			"dup.json:4: row 1 (a backend=cpu batch=1 threads=2 dtype=float32): a second row for the same key (the first is at line 3)"},
		"median.json": {benchJSON("[100, 110, 120]", `{"case": "b", "backend": "cpu", "median_ns": -3}`), "median.json:4: row 1 (b backend=cpu batch=0 threads=0 dtype=): median_ns is -3"},
	}
	for name, f := range files {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(f.content), 0o644)
		for _, args := range [][]string{{"report", p}, {"compare", p, p}} {
			r := runHostile(t, runOpts{dir: dir}, args...)
			wantExit(t, r, 2, args...)
			wantIn(t, name, r.stderr, filepath.Join(dir, f.want))
		}
	}
}

// TestHostileCompareVerdicts: compare used to pass (exit 0) when HEAD was empty or shared
// no case with BASE, and accepted -alpha -1, 2 and NaN. Nothing compared now fails the
// gate (exit 1, saying so), and a significance level outside (0, 1) is bad usage (exit 2).
func TestHostileCompareVerdicts(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	os.WriteFile(base, []byte(benchJSON("[100, 110, 120, 105, 115, 108]", "")), 0o644)
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte(`{"meta": {}, "rows": []}`), 0o644)
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`{"meta": {}, "rows": [{"case": "z", "backend": "cpu", "batch": 1, "threads": 2, "dtype": "float32", "n": 1, "samples_ns": [100]}]}`), 0o644)
	checkBase := filepath.Join(dir, "check-base.json")
	os.WriteFile(checkBase, []byte(`{"meta": {}, "rows": [{"case": "a", "backend": "cpu", "dtype": "float32", "status": "OK"}]}`), 0o644)
	checkOther := filepath.Join(dir, "check-other.json")
	os.WriteFile(checkOther, []byte(`{"meta": {}, "rows": [{"case": "b", "backend": "cpu", "dtype": "float32", "status": "OK"}]}`), 0o644)
	for _, head := range []string{empty, other} {
		r := runHostile(t, runOpts{dir: dir}, "compare", base, head)
		wantExit(t, r, 1, "compare", base, head)
		wantIn(t, "compare BASE "+filepath.Base(head), r.stderr, "nothing compared: no timing row of HEAD")
	}
	r := runHostile(t, runOpts{dir: dir}, "compare", checkBase, checkOther)
	wantExit(t, r, 1, "compare", checkBase, checkOther)
	wantIn(t, "compare of conformance files", r.stderr, "nothing compared: no conformance row of HEAD")
	for _, alpha := range []string{"-1", "2", "NaN", "0", "1"} {
		r := runHostile(t, runOpts{dir: dir}, "compare", "-alpha", alpha, base, base)
		wantExit(t, r, 2, "compare -alpha", alpha)
		wantIn(t, "compare -alpha "+alpha, r.stderr, "-alpha: want a significance level strictly between 0 and 1")
	}
	r = runHostile(t, runOpts{dir: dir}, "compare", "-threshold", "NaN", base, base)
	wantExit(t, r, 2, "compare -threshold NaN")
	r = runHostile(t, runOpts{dir: dir}, "compare", base, base)
	wantExit(t, r, 0, "compare", base, base)
}
