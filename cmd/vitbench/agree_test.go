package main

import (
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// TestAgreeJudgesBackendsAgainstTheReference: the faulty backend (a launch failure, an out
// of memory, a silently wrong avg_pool2d) against the CPU on built-in cases: the wrong
// result and both failures are FAIL rows naming the cause, the untouched case is OK, the
// JSON names the reference, and the exit status is 1.
func TestAgreeJudgesBackendsAgainstTheReference(t *testing.T) {
	cfg := faultyCfg
	cfg.skewOp = "avg_pool2d"
	armFaulty(t, cfg)
	js := filepath.Join(t.TempDir(), "agree.json")
	code, out, stderr := vitbench(t, "agree", "-ref", "cpu", "-backend", "faulty", "-run", faultyRun, "-json", js)
	if code != exitFail {
		t.Errorf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	cf, err := results.ReadCheck(js)
	if err != nil {
		t.Fatal(err)
	}
	if cf.Meta.Extra["reference"] != "cpu" {
		t.Errorf("meta extra reference = %q, want cpu", cf.Meta.Extra["reference"])
	}
	want := map[string]string{
		"layernorm/odd_b2_d147":      "CUDA_ERROR_LAUNCH_FAILED",
		"fold/volo_d1":               "CUDA_ERROR_OUT_OF_MEMORY",
		"avg_pool2d/ceil_odd":        "outside atol",
		"soft_split/odd_c5_k3_s2_p1": "",
	}
	if len(cf.Rows) != len(want) {
		t.Errorf("%d rows, want %d:\n%s", len(cf.Rows), len(want), out)
	}
	for _, r := range cf.Rows {
		w, ok := want[r.Case]
		switch {
		case !ok:
			t.Errorf("unexpected row %s", r.Case)
		case w == "" && r.Status != "OK":
			t.Errorf("%s: %s %q, want OK", r.Case, r.Status, r.Reason)
		case w != "" && (r.Status != "FAIL" || !strings.Contains(r.Reason, w)):
			t.Errorf("%s: %s %q, want a FAIL with %q", r.Case, r.Status, r.Reason, w)
		}
	}
}

// TestAgreeOnANetworkAndWithAnUnavailableBackend: two CPU backends agree exactly on a whole
// network (logits and top-1 included), and a backend that cannot run gives NS rows with
// its reason and exit status 0.
func TestAgreeOnANetworkAndWithAnUnavailableBackend(t *testing.T) {
	code, out, stderr := vitbench(t, "agree", "-ref", "cpu", "-backend", "cpu,faulty", "-run", "^(vit_tiny_odd|volo_tiny_odd)$", "-batch", "3")
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"Agreement with backend cpu", "2 OK, 0 FAIL, 2 NS", "test-only backend, not armed"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if code, _, stderr := vitbench(t, "agree", "-ref", "faulty", "-backend", "cpu", "-run", "^vit_tiny_odd$"); code != exitUsage || !strings.Contains(stderr, "reference backend faulty is unavailable") {
		t.Errorf("an unavailable reference: exit %d, stderr %q; want 2 naming it", code, stderr)
	}
}
