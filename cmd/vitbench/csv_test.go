package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// readCSV reads a CSV file whole.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}

// checkCSVRow checks that recs is the header and then rows of case name, the first on the
// CPU, with every numeric column a number (or empty) and img/s, step times, params and
// threads filled in.
func checkCSVRow(t *testing.T, recs [][]string, name string) {
	t.Helper()
	if len(recs) < 2 || recs[0][0] != "model" || recs[1][0] != name || recs[1][1] != "cpu" {
		t.Fatalf("CSV %q, want the header and a row of %s on cpu", recs, name)
	}
	col := map[string]string{}
	for i, h := range recs[0] {
		col[h] = recs[1][i]
		if i >= 3 && recs[1][i] != "" {
			if _, err := strconv.ParseFloat(recs[1][i], 64); err != nil {
				t.Errorf("column %s = %q: not a number", h, recs[1][i])
			}
		}
	}
	for _, k := range []string{"infer_batch_size", "infer_samples_per_sec", "infer_step_time", "infer_step_time_p90", "param_count", "threads"} {
		if col[k] == "" {
			t.Errorf("column %s is empty: %q", k, recs)
		}
	}
}

// TestBenchCSVFlag: `bench -csv FILE` writes the timm-style CSV beside the other outputs.
func TestBenchCSVFlag(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "b.csv")
	const name = "layernorm/odd_b2_d147"
	code, _, stderr := vitbench(t, "bench", "-run", "^"+name+"$", "-count", "2", "-warmup", "0", "-min-sample", "0",
		"-threads", "1", "-o", filepath.Join(dir, "b.txt"), "-csv", p)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	checkCSVRow(t, readCSV(t, p), name)
}

// TestRunWritesCSV: `vitbench run` writes bench.csv into its output directory, and
// -machine names the machine in the report's header and in the result files.
func TestRunWritesCSV(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	const name = "layernorm/odd_b2_d147"
	code, _, stderr := vitbench(t, "run", "-full", "-o", out, "-fixtures", fixtureRoot, "-torch", "off", "-run", "^"+name+"$",
		"-count", "2", "-min-sample", "0", "-threads", "1", "-machine", "ci-box")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	checkCSVRow(t, readCSV(t, filepath.Join(out, "bench.csv")), name)
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), name) ||
		!strings.Contains(string(md), "- Machine: ci-box\n") {
		t.Errorf("report.md lacks %s or the machine ci-box (%v)\n%s", name, err, md)
	}
	bf, err := results.ReadBench(filepath.Join(out, "bench.json"))
	if err != nil || bf.Meta.Machine != "ci-box" {
		t.Errorf("bench.json names machine %q (%v), want ci-box", bf.Meta.Machine, err)
	}
	cf, err := results.ReadCheck(filepath.Join(out, "check.json"))
	if err != nil || cf.Meta.Machine != "ci-box" {
		t.Errorf("check.json names machine %q (%v), want ci-box", cf.Meta.Machine, err)
	}
}
