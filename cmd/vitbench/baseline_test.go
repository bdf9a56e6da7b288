package main

import (
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"vitbench/bench/report"
	"vitbench/bench/results"
	"vitbench/impl/cpu"
)

// TestBaselineCheck writes a baseline of two cases with their peak bytes, checks the
// unchanged cases against it (exit 0), then doctors it: a changed MAC count and a case the
// registry no longer has fail with the case and metric named (exit 1); a case missing from
// the baseline is reported as new and passes.
func TestBaselineCheck(t *testing.T) {
	const run = "^(gemm/odd_m13_n37_k29|soft_split/dil2_k3)$"
	p := filepath.Join(t.TempDir(), "baseline.json")
	isa := cpu.ISA()
	if code, _, stderr := vitbench(t, "baseline", "-o", p, "-run", run, "-isa", isa); code != exitOK {
		t.Fatalf("write: exit %d: %s", code, stderr)
	}
	b, err := report.ReadBaseline(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Cases) != 2 || b.PeakThreads != defaultBaselineThreads || b.Cases[0].PeakBytes[isa] <= 0 || b.Cases[0].MACs != 13949 {
		t.Fatalf("baseline %+v", b)
	}
	if code, out, stderr := vitbench(t, "baseline", "-check", p, "-run", run); code != exitOK || !strings.Contains(out, "ok: no change") {
		t.Fatalf("unchanged: exit %d\n%s\n%s", code, out, stderr)
	}

	macs := b.Cases[0].MACs
	b.Cases[0].MACs++
	b.Cases = append(b.Cases[:1], report.BaselineCase{Case: "gone/case", Kind: "component", Op: "gemm"})
	if err := results.WriteFileAtomic(p, func(w io.Writer) error { return report.WriteBaseline(w, b) }); err != nil {
		t.Fatal(err)
	}
	code, out, _ := vitbench(t, "baseline", "-check", p, "-run", "^(gemm/odd_m13_n37_k29|soft_split/dil2_k3|gone/case)$")
	for _, want := range []string{
		"- gemm/odd_m13_n37_k29: MACs " + itoa(macs+1) + " -> " + itoa(macs),
		"VANISHED cases (failures) (1):\n- gone/case",
		"New cases, not in the baseline yet (not failures) (1):\n- soft_split/dil2_k3",
		"FAIL: 1 metric changes, 1 vanished cases",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != exitFail {
		t.Errorf("doctored baseline: exit %d, want 1", code)
	}
	if code, _, _ := vitbench(t, "baseline", "-o", p, "-check", p); code != exitUsage {
		t.Errorf("-o with -check: exit %d", code)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
