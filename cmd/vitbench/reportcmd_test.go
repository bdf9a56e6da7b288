package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportWritesPlots: report -o writes the roofline beside the report with the
// ceilings of -peak and links it; with no network timed, the throughput chart is not
// written and the report says so. -base adds the A/B section against that file.
func TestReportWritesPlots(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "b.txt")
	if code, _, stderr := vitbench(t, "bench", "-run", "rect", "-count", "6", "-warmup", "1", "-min-sample", "0", "-o", txt); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	peak := filepath.Join(dir, "peak.json")
	os.WriteFile(peak, []byte(`{"cpu": "test", "isa": "avx2", "threads": 2, "fma_gflops_per_core": 100,
		"fma_gflops_total": 200, "bandwidth_gbps_1t": 20, "bandwidth_gbps_total": 30}`), 0o644)
	md := filepath.Join(dir, "out", "r.md")
	os.MkdirAll(filepath.Dir(md), 0o755)
	code, _, stderr := vitbench(t, "report", "-o", md, "-peak", peak, "-base", txt, txt)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	report := string(raw)
	for _, s := range []string{"## Plots", "](r-roofline.png)", "(2 threads)",
		"- No throughput chart: no network case was timed.", "## A/B: base → this report", "| geomean "} {
		if !strings.Contains(report, s) {
			t.Errorf("report lacks %q:\n%s", s, report)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "out", "r-roofline.png")); err != nil || st.Size() < 1000 {
		t.Errorf("roofline: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "r-throughput.png")); !os.IsNotExist(err) {
		t.Errorf("throughput chart written without networks: %v", err)
	}
	if !strings.Contains(stderr, "plot written to "+filepath.Join(dir, "out", "r-roofline.png")) {
		t.Errorf("stderr: %s", stderr)
	}
}
