package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/results"
	"vitbench/bench/runner"
)

// slowedBackend is a deliberately slowed kernel: every node runs three times, so each call
// does three times the real work of the backend it wraps and leaves the same outputs.
type slowedBackend struct{ bench.Backend }

// Enqueue runs node three times.
func (s slowedBackend) Enqueue(node bench.Node, in, out []bench.Tensor) error {
	for i := 0; i < 3; i++ {
		if err := s.Backend.Enqueue(node, in, out); err != nil {
			return err
		}
	}
	return nil
}

// timeInterleaved times the programs in turn, sample by sample (as the design asks of an
// A/B comparison, so that a change in the machine's load hits every side alike), and
// returns count samples per program in ns per run, each the mean of the runs of at least
// 5 ms.
func timeInterleaved(t *testing.T, b bench.Backend, count int, progs ...*runner.Program) [][]float64 {
	t.Helper()
	out := make([][]float64, len(progs))
	for i := 0; i < count+2; i++ {
		for j, p := range progs {
			var ns float64
			reps := 0
			for ns < 5e6 {
				tm, err := b.Time(p.Run)
				if err != nil {
					t.Fatal(err)
				}
				ns += float64(tm.EndToEnd.Nanoseconds())
				reps++
			}
			if i >= 2 { // the first two rounds warm up
				out[j] = append(out[j], ns/float64(reps))
			}
		}
	}
	return out
}

// TestCompareFailsSlowedKernel times a real kernel (gemm/vit_s16_qkv on the CPU backend,
// one thread) three ways, interleaved: unchanged, deliberately slowed (every node run
// three times) and unchanged again. `vitbench compare -max-slowdown 10%` must fail the
// slowed head with a regression on that case and pass the unchanged one. On a shared
// machine another process can swamp one measurement, so the measurement is repeated up to
// three times and the test fails only if no attempt shows both verdicts.
func TestCompareFailsSlowedKernel(t *testing.T) {
	const caseName = "gemm/vit_s16_qkv"
	list := cases.Match(regexp.MustCompile("^" + regexp.QuoteMeta(caseName) + "$"))
	if len(list) != 1 {
		t.Fatalf("case %s: %d matches", caseName, len(list))
	}
	c := list[0]
	spec, err := c.Spec(0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bench.OpenBackend("cpu", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	data := runner.SynthData(spec, 1)
	var progs []*runner.Program
	for _, be := range []bench.Backend{b, slowedBackend{b}, b} {
		p, err := runner.Prepare(be, spec, c.DType, data)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		progs = append(progs, p)
	}
	dir := t.TempDir()
	write := func(name string, s []float64) string {
		bf := results.BenchFile{Meta: results.Meta{Tool: "vitbench", Commit: name}, Rows: []results.BenchRow{
			results.NewBenchRow(caseName, "cpu", 1, 1, string(c.DType), spec.MACs(), spec.Bytes(), 0, 0, s, nil)}}
		p := filepath.Join(dir, name+".json")
		if err := results.WriteFileAtomic(p, func(w io.Writer) error { return results.WriteBenchJSON(w, bf) }); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var failures []string
	var base, slowed string
	for attempt := 1; attempt <= 3; attempt++ {
		samples := timeInterleaved(t, b, 12, progs...)
		base, slowed = write("base", samples[0]), write("slowed", samples[1])
		same := write("unchanged", samples[2])
		t.Logf("attempt %d medians: base %.3f ms, slowed %.3f ms, unchanged %.3f ms", attempt,
			results.Summarize(samples[0]).Median/1e6, results.Summarize(samples[1]).Median/1e6, results.Summarize(samples[2]).Median/1e6)
		ok := true
		code, out, stderr := vitbench(t, "compare", "-max-slowdown", "10%", base, slowed)
		if code != exitFail || !strings.Contains(stderr, "regression: "+caseName) || !strings.Contains(out, "REGRESSION") {
			ok = false
			failures = append(failures, fmt.Sprintf("attempt %d, slowed kernel: exit %d, want 1 with a regression on %s\n%s\n%s", attempt, code, caseName, out, stderr))
		}
		code, out, stderr = vitbench(t, "compare", "-max-slowdown", "10%", base, same)
		if code != exitOK {
			ok = false
			failures = append(failures, fmt.Sprintf("attempt %d, unchanged kernel: exit %d, want 0\n%s\n%s", attempt, code, out, stderr))
		}
		if ok {
			failures = nil
			break
		}
	}
	if failures != nil {
		t.Error(strings.Join(failures, "\n"))
	}
	// Reported but not gated: -max-slowdown off.
	if code, out, _ := vitbench(t, "compare", "-max-slowdown", "off", base, slowed); code != exitOK || !strings.Contains(out, "%") {
		t.Errorf("-max-slowdown off: exit %d\n%s", code, out)
	}
}

// TestCompareConformanceAndDirs: run directories are read whole; an OK → FAIL change of a
// conformance row fails the gate with the case named, a FAIL → OK change passes, and a
// case checked only in head is listed as new.
func TestCompareConformanceAndDirs(t *testing.T) {
	mkRun := func(name string, statuses map[string]string) string {
		dir := filepath.Join(t.TempDir(), name)
		os.MkdirAll(dir, 0o755)
		var cf results.CheckFile
		for c, s := range statuses {
			cf.Rows = append(cf.Rows, results.CheckRow{Case: c, Backend: "cpu", DType: "float32", Status: s, NMSE: 1e-12, Reason: "r"})
		}
		f, _ := os.Create(filepath.Join(dir, "check.json"))
		defer f.Close()
		if err := results.WriteCheckJSON(f, cf); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	base := mkRun("base", map[string]string{"a": "OK", "b": "FAIL"})
	worse := mkRun("worse", map[string]string{"a": "FAIL", "b": "FAIL", "new": "OK"})
	better := mkRun("better", map[string]string{"a": "OK", "b": "OK", "new": "OK"})
	code, out, stderr := vitbench(t, "compare", base, worse)
	if code != exitFail || !strings.Contains(stderr, "conformance regression: a backend=cpu dtype=float32: OK -> FAIL") {
		t.Errorf("OK -> FAIL: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = vitbench(t, "compare", base, better)
	if code != exitOK || !strings.Contains(out, "Fixed (1):") || !strings.Contains(out, "Checked only in head (1):\n- new ") {
		t.Errorf("FAIL -> OK: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr := vitbench(t, "compare", "-max-slowdown", "ten", base, better); code != exitUsage {
		t.Errorf("bad -max-slowdown: exit %d %s", code, stderr)
	}
}

func TestParseSlowdown(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
		gate bool
	}{{"10%", 0.1, true}, {"0.25", 0.25, true}, {"0", 0, true}, {"off", 0, false}} {
		got, gate, err := parseSlowdown(tt.in)
		if err != nil || gate != tt.gate || (gate && got != tt.want) {
			t.Errorf("parseSlowdown(%q) = %v, %v, %v", tt.in, got, gate, err)
		}
	}
	for _, bad := range []string{"", "-5%", "x", "NaN"} {
		if _, _, err := parseSlowdown(bad); err == nil {
			t.Errorf("parseSlowdown(%q): no error", bad)
		}
	}
}

// TestCompareFailsVanishedCase: a case in BASE that HEAD lacks fails compare (exit 1),
// named on stderr, for timing rows and for conformance rows alike; a case new in HEAD
// passes.
func TestCompareFailsVanishedCase(t *testing.T) {
	dir := t.TempDir()
	samples := []float64{1e6, 1.01e6, 0.99e6, 1.02e6, 0.98e6}
	writeBench := func(name string, caseNames ...string) string {
		bf := results.BenchFile{Meta: results.Meta{Tool: "vitbench"}}
		for _, c := range caseNames {
			bf.Rows = append(bf.Rows, results.NewBenchRow(c, "cpu", 1, 2, "float32", 1000, 4000, 0, 0, samples, nil))
		}
		p := filepath.Join(dir, name+".json")
		if err := results.WriteFileAtomic(p, func(w io.Writer) error { return results.WriteBenchJSON(w, bf) }); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeCheck := func(name string, caseNames ...string) string {
		var cf results.CheckFile
		for _, c := range caseNames {
			cf.Rows = append(cf.Rows, results.CheckRow{Case: c, Backend: "cpu", DType: "float32", Status: "OK", NMSE: 1e-12})
		}
		p := filepath.Join(dir, name+"-check.json")
		if err := results.WriteFileAtomic(p, func(w io.Writer) error { return results.WriteCheckJSON(w, cf) }); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := writeBench("base", "kept", "gone")
	head := writeBench("head", "kept", "added")
	code, out, stderr := vitbench(t, "compare", base, head)
	if code != exitFail || !strings.Contains(stderr, "vanished: gone backend=cpu batch=1 threads=2 dtype=float32: in BASE, missing from HEAD") {
		t.Errorf("timing case gone from head: exit %d, want 1 naming it\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(stderr, "added") {
		t.Errorf("a case new in head is reported as a failure:\n%s", stderr)
	}
	if code, out, stderr := vitbench(t, "compare", base, writeBench("same", "kept", "gone", "added")); code != exitOK {
		t.Errorf("head with every base case and a new one: exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	cbase, chead := writeCheck("base", "kept", "gone"), writeCheck("head", "kept")
	code, out, stderr = vitbench(t, "compare", cbase, chead)
	if code != exitFail || !strings.Contains(stderr, "vanished conformance row: gone backend=cpu dtype=float32: in BASE, missing from HEAD") {
		t.Errorf("conformance case gone from head: exit %d, want 1 naming it\n%s\n%s", code, out, stderr)
	}
}
