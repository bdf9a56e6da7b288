package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"vitbench/bench"
	"vitbench/bench/results"
	"vitbench/impl/cpu"
)

// faultyConfig is what the test-only "faulty" backend injects.
type faultyConfig struct {
	maxAllocBytes int64  // Alloc of a larger tensor fails as out of device memory
	failOp        string // Enqueue of a node of this op kind fails as a failed launch
	skewOp        string // a node of this op kind runs, then its first output is scaled by 1.05: a wrong result, no error
}

// faultyArmed is the faulty backend's configuration; nil (outside the tests
// that arm it) opens the backend unavailable, so that "-backend all" in
// other tests only gains NS rows.
var faultyArmed atomic.Pointer[faultyConfig]

func init() {
	bench.RegisterBackend("faulty", func(threads int) (bench.Backend, error) {
		cfg := faultyArmed.Load()
		if cfg == nil {
			return faultyBackend{Backend: cpu.New(threads), unavailable: true}, nil
		}
		return faultyBackend{Backend: cpu.New(threads), cfg: *cfg}, nil
	})
}

// armFaulty makes backends opened by "faulty" during the test inject cfg's
// failures.
func armFaulty(t *testing.T, cfg faultyConfig) {
	faultyArmed.Store(&cfg)
	t.Cleanup(func() { faultyArmed.Store(nil) })
}

// faultyBackend is the CPU backend failing as a failing GPU would: tensors
// above a size cannot be allocated (CUDA_ERROR_OUT_OF_MEMORY) and one op
// kind's kernel fails to launch (CUDA_ERROR_LAUNCH_FAILED). Every other
// call, and so every other case, runs on the CPU.
type faultyBackend struct {
	bench.Backend
	cfg         faultyConfig
	unavailable bool
}

// Name implements bench.Backend.
func (f faultyBackend) Name() string { return "faulty" }

// Info implements bench.Backend: the CPU's, under the faulty name.
func (f faultyBackend) Info() bench.Info {
	info := f.Backend.Info()
	info.Name = "faulty"
	if f.unavailable {
		info.Available, info.Reason = false, "test-only backend, not armed"
	}
	return info
}

// Supports implements bench.Backend.
func (f faultyBackend) Supports(op string, dt bench.DType) error {
	if f.unavailable {
		return fmt.Errorf("faulty: test-only backend, not armed")
	}
	return f.Backend.Supports(op, dt)
}

// Alloc implements bench.Backend, failing above the configured size.
func (f faultyBackend) Alloc(shape bench.Shape, dt bench.DType) (bench.Tensor, error) {
	if n := shape.Elems() * 4; n > f.cfg.maxAllocBytes {
		return nil, fmt.Errorf("faulty: allocating %v (%d bytes): cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory (injected)", shape, n)
	}
	return f.Backend.Alloc(shape, dt)
}

// Enqueue implements bench.Backend, failing the configured op kind.
func (f faultyBackend) Enqueue(node bench.Node, in, out []bench.Tensor) error {
	if op := node.OpName(); op == f.cfg.failOp {
		return fmt.Errorf("faulty: %s: %s_f32: cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED (719): unspecified launch failure (injected)", op, op)
	}
	if err := f.Backend.Enqueue(node, in, out); err != nil || node.OpName() != f.cfg.skewOp {
		return err
	}
	v := make([]float32, out[0].Shape().Elems())
	if err := f.Backend.Download(out[0], v); err != nil {
		return err
	}
	for i := range v {
		v[i] *= 1.05
	}
	return f.Backend.Upload(out[0], v)
}

// The cases of the device-failure tests, as fixtures and as built-in cases,
// and what the faulty backend does to each (256 KiB allocations at most,
// layernorm failing to launch).
var (
	faultyCases = map[string]string{
		"layernorm/odd_b2_d147":      "CUDA_ERROR_LAUNCH_FAILED",
		"fold/volo_d1":               "CUDA_ERROR_OUT_OF_MEMORY",
		"soft_split/odd_c5_k3_s2_p1": "",
		"avg_pool2d/ceil_odd":        "",
	}
	faultyRun = "^(layernorm/odd_b2_d147|fold/volo_d1|soft_split/odd_c5_k3_s2_p1|avg_pool2d/ceil_odd)$"
	faultyCfg = faultyConfig{maxAllocBytes: 256 << 10, failOp: "layernorm"}
)

// TestCheckKeepsGoingOnDeviceFailures: `check -backend cpu,faulty` on four
// fixtures, two of which the faulty backend cannot run (out of memory, a
// failed launch). Every cpu row is OK; each affected faulty row is a FAIL
// (not an input error) carrying the injected message, in the table and in
// -json; the other faulty rows are OK; the exit status is 1, results being
// missing.
func TestCheckKeepsGoingOnDeviceFailures(t *testing.T) {
	armFaulty(t, faultyCfg)
	js := filepath.Join(t.TempDir(), "check.json")
	code, out, stderr := vitbench(t, "check", "-backend", "cpu,faulty", "-fixtures", fixtureRoot, "-run", faultyRun, "-json", js)
	if code != exitFail {
		t.Errorf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(out+stderr, "panic") || strings.Contains(out+stderr, "goroutine ") {
		t.Errorf("a panic in the output:\n%s\n%s", out, stderr)
	}
	cf, err := results.ReadCheck(js)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range cf.Rows {
		seen[r.Backend+" "+r.Case] = true
		want, known := faultyCases[r.Case]
		switch {
		case !known:
			t.Errorf("unexpected row %s on %s", r.Case, r.Backend)
		case r.Backend == "cpu" || want == "":
			if r.Status != "OK" {
				t.Errorf("%s on %s: %s %s, want OK", r.Case, r.Backend, r.Status, r.Reason)
			}
		default:
			if r.Status != "FAIL" || r.Error || !strings.Contains(r.Reason, want) || !strings.Contains(r.Reason, "injected") {
				t.Errorf("%s on %s: %s (input error %v) %q, want a FAIL with %s", r.Case, r.Backend, r.Status, r.Error, r.Reason, want)
			}
			if !strings.Contains(out, want) {
				t.Errorf("the table lacks %s's %s:\n%s", r.Case, want, out)
			}
		}
	}
	for c := range faultyCases {
		for _, b := range []string{"cpu", "faulty"} {
			if !seen[b+" "+c] {
				t.Errorf("no row for %s on %s", c, b)
			}
		}
	}
	if len(cf.Rows) != 2*len(faultyCases) || !strings.Contains(out, "6 OK, 2 FAIL, 0 NS") {
		t.Errorf("%d rows, want %d; table:\n%s", len(cf.Rows), 2*len(faultyCases), out)
	}
}

// TestBenchKeepsGoingOnDeviceFailures: `bench -backend cpu,faulty` on the
// same four cases times every cpu case and the two faulty ones that run;
// each of the two that cannot is an ERROR line naming the case, the backend
// and the injected error, and the final error names both; exit status 1.
func TestBenchKeepsGoingOnDeviceFailures(t *testing.T) {
	armFaulty(t, faultyCfg)
	dir := t.TempDir()
	txt, js := filepath.Join(dir, "b.txt"), filepath.Join(dir, "b.json")
	code, _, stderr := vitbench(t, "bench", "-backend", "cpu,faulty", "-run", faultyRun, "-count", "2", "-warmup", "0",
		"-min-sample", "0", "-o", txt, "-json", js)
	if code != exitFail {
		t.Errorf("exit %d, want 1\n%s", code, stderr)
	}
	if strings.Contains(stderr, "panic") {
		t.Errorf("a panic in the output:\n%s", stderr)
	}
	for _, p := range []string{txt, js} {
		bf, err := results.ReadBench(p)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, r := range bf.Rows {
			got[r.Backend+" "+r.Case] = true
			if r.N != 2 || !(r.MedianNs > 0) {
				t.Errorf("%s: %s on %s: %d samples, median %v", p, r.Case, r.Backend, r.N, r.MedianNs)
			}
		}
		failed := map[string]string{}
		for _, f := range bf.Failed {
			failed[f.Backend+" "+f.Case] = f.Error
		}
		for c, want := range faultyCases {
			if !got["cpu "+c] {
				t.Errorf("%s: no cpu row for %s", p, c)
			}
			if got["faulty "+c] != (want == "") {
				t.Errorf("%s: faulty row for %s present=%v, want %v", p, c, got["faulty "+c], want == "")
			}
			// A case without a result is recorded as a failure with its error.
			if msg, ok := failed["faulty "+c]; ok != (want != "") || !strings.Contains(msg, want) {
				t.Errorf("%s: failure record for %s on faulty = %q (present %v), want one containing %q", p, c, msg, ok, want)
			}
		}
		if len(bf.Failed) != 2 {
			t.Errorf("%s: %d failure records, want 2", p, len(bf.Failed))
		}
	}
	// The report made from these files lists the failed cases as FAIL rows.
	rep := filepath.Join(dir, "report.md")
	if code, out, errOut := vitbench(t, "report", "-o", rep, js); code != 0 {
		t.Fatalf("report: exit %d\n%s%s", code, out, errOut)
	}
	md, _ := os.ReadFile(rep)
	for c, want := range faultyCases {
		if want != "" && !regexp.MustCompile(regexp.QuoteMeta(c)+` +\| faulty .*\| FAIL +\| .*`+regexp.QuoteMeta(want)).Match(md) {
			t.Errorf("the report has no FAIL row for %s on faulty with %q:\n%s", c, want, md)
		}
	}
	for c, want := range faultyCases {
		if want == "" {
			continue
		}
		line := ""
		for _, l := range strings.Split(stderr, "\n") {
			if strings.Contains(l, c) && strings.Contains(l, "faulty") && strings.Contains(l, "ERROR") {
				line = l
			}
		}
		if !strings.Contains(line, want) {
			t.Errorf("no ERROR line for %s on faulty with %s:\n%s", c, want, stderr)
		}
		if !strings.Contains(stderr, c+" on faulty: ") {
			t.Errorf("the final error does not name %s:\n%s", c, stderr)
		}
	}
	if !strings.Contains(stderr, "2 cases have no result") {
		t.Errorf("the final error does not count the cases without a result:\n%s", stderr)
	}
}

// TestUnavailableCUDAExitsZero: with the real cuda backend and no driver
// (this machine, CI), its rows are NS with the driver's reason, bench says
// it is not timed, and the exit status is 0: NS is an answer, not a
// missing result.
func TestUnavailableCUDAExitsZero(t *testing.T) {
	be, err := bench.OpenBackend("cuda", 0)
	if err != nil {
		t.Fatal(err)
	}
	info := be.Info()
	be.Close()
	if info.Available {
		t.Skip("a CUDA device is present")
	}
	js := filepath.Join(t.TempDir(), "check.json")
	code, out, stderr := vitbench(t, "check", "-backend", "cpu,cuda", "-fixtures", fixtureRoot, "-run", faultyRun, "-json", js)
	if code != exitOK {
		t.Errorf("check: exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	cf, err := results.ReadCheck(js)
	if err != nil {
		t.Fatal(err)
	}
	ns := 0
	for _, r := range cf.Rows {
		switch {
		case r.Backend == "cuda" && r.Status == "NS" && r.Reason == info.Reason:
			ns++
		case r.Backend == "cpu" && r.Status == "OK":
		default:
			t.Errorf("row %s on %s: %s %q", r.Case, r.Backend, r.Status, r.Reason)
		}
	}
	if ns != len(faultyCases) {
		t.Errorf("%d NS rows for cuda, want %d", ns, len(faultyCases))
	}
	code, _, stderr = vitbench(t, "bench", "-backend", "cpu,cuda", "-run", faultyRun, "-count", "2", "-warmup", "0",
		"-min-sample", "0", "-o", filepath.Join(t.TempDir(), "b.txt"))
	if code != exitOK || !strings.Contains(stderr, "cuda: unavailable, not timed: "+info.Reason) {
		t.Errorf("bench: exit %d, want 0 and cuda not timed\n%s", code, stderr)
	}
}
