package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"vitbench/bench"
	vcpu "vitbench/impl/cpu"
)

func TestPeakJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"peak", "-json", "-duration", "50ms"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	var r map[string]any
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, k := range []string{"cpu", "isa"} {
		if s, _ := r[k].(string); s == "" {
			t.Errorf("%s = %v, want a name", k, r[k])
		}
	}
	for _, k := range []string{"threads", "fma_gflops_per_core", "fma_gflops_total", "fma_gflops_per_core_median",
		"fma_gflops_total_median", "bandwidth_gbps_1t", "bandwidth_gbps_total"} {
		if v, ok := r[k].(float64); !ok || !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s = %v, want a positive finite number", k, r[k])
		}
	}
	// The bf16 dot-product peak is there exactly where cpu-bf16 can run.
	be, err := bench.OpenBackend("cpu-bf16", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bf16_dot_gflops_per_core", "bf16_dot_gflops_total", "bf16_dot_gflops_per_core_median", "bf16_dot_gflops_total_median"} {
		v, ok := r[k].(float64)
		if be.Info().Available != (ok && v > 0 && !math.IsInf(v, 0)) {
			t.Errorf("%s = %v, cpu-bf16 available %v", k, r[k], be.Info().Available)
		}
	}
	if r["duration_s"] != 0.05 {
		t.Errorf("duration_s = %v, want 0.05", r["duration_s"])
	}
}

func TestPeakTable(t *testing.T) {
	code, out, stderr := vitbench(t, "peak", "-isa", "go", "-threads", "1", "-duration", "5ms", "-count", "2", "-mem-mib", "6")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"FMA path go", "fp32 FMA peak (best)", "1 thread (all)", "GFLOP/s", "GB/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestPeakBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"peak", "-isa", "sse1"},
		{"peak", "-threads", "-1"},
		{"peak", "-duration", "0s"},
		{"peak", "extra"},
	} {
		if code, _, _ := vitbench(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestPeaksByBackend: the report reads cpu rows against the fp32 FMA peak
// and cpu-bf16 rows against the bf16 dot product's, one thread's or all
// threads' as the rows ran; without a bf16 figure cpu-bf16 has none.
func TestPeaksByBackend(t *testing.T) {
	pk := vcpu.PeakResult{FMAPerCore: 100, FMATotal: 190, BF16PerCore: 220, BF16Total: 430}
	if got := peaksByBackend(pk, 1); got["cpu"] != 100 || got["cpu-bf16"] != 220 {
		t.Errorf("one thread: %v", got)
	}
	if got := peaksByBackend(pk, 2); got["cpu"] != 190 || got["cpu-bf16"] != 430 {
		t.Errorf("two threads: %v", got)
	}
	pk.BF16PerCore, pk.BF16Total = 0, 0
	if got := peaksByBackend(pk, 2); len(got) != 1 {
		t.Errorf("without a bf16 peak: %v", got)
	}
}
