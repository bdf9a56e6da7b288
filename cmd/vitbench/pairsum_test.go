package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// writePairRun writes dir/bench.txt and dir/ort.txt as vitbench pair does: per case, the
// vitbench samples and ONNX Runtime's in pair order, plus the failures given.
func writePairRun(t *testing.T, dir, commit string, rows map[string][2][]float64, failed ...results.BenchFailure) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	vb := results.BenchFile{Meta: results.Meta{Tool: "vitbench", Commit: commit, Date: "2026-12-07T03:00:00Z", Machine: "test-host", Threads: 2}}
	ort := results.BenchFile{Meta: results.Meta{Tool: "vitbench", Date: vb.Meta.Date, Machine: "test-host"}}
	for _, name := range []string{"block/vit_b16", "vit_b16", "clip_vit_b16"} {
		s, ok := rows[name]
		if !ok {
			continue
		}
		vb.Rows = append(vb.Rows, results.NewBenchRow(name, "cpu", 1, 2, "float32", 1e9, 1e6, 0, 0, s[0], nil))
		ort.Rows = append(ort.Rows, results.NewBenchRow(name, ortBackend, 1, 2, "float32", 1e9, 1e6, 0, 0, s[1], nil))
	}
	vb.Failed = append(vb.Failed, failed...)
	for name, f := range map[string]results.BenchFile{"bench.txt": vb, "ort.txt": ort} {
		err := results.WriteFileAtomic(filepath.Join(dir, name), func(w io.Writer) error { return results.WriteBenchText(w, f) })
		if err != nil {
			t.Fatal(err)
		}
	}
}

// scaled returns n samples of base·(1 + small wobble) and ORT's at ratio times them, so that
// every pair's ratio is ratio while the samples themselves vary.
func scaled(n int, base, ratio float64) [2][]float64 {
	var vb, ort []float64
	for i := 0; i < n; i++ {
		v := base * (1 + 0.01*float64(i%5))
		vb, ort = append(vb, v), append(ort, v*ratio)
	}
	return [2][]float64{vb, ort}
}

// TestPairsSummarisesRuns: two pair runs, a case at 1.20× in both, one at 1.10× then
// 1.25×, one only in the first run and NS in the second. The table recomputes each
// run's median ratio from the samples (ORT's over vitbench's, not the inverse), takes the
// lowest and the median of the runs, and with -target counts the runs that reach it;
// the exit status says whether every case's every run did.
func TestPairsSummarisesRuns(t *testing.T) {
	dir := t.TempDir()
	r1, r2 := filepath.Join(dir, "run1"), filepath.Join(dir, "run2")
	writePairRun(t, r1, "aaaa", map[string][2][]float64{
		"block/vit_b16": scaled(12, 9e6, 1.20), "vit_b16": scaled(12, 110e6, 1.10), "clip_vit_b16": scaled(12, 115e6, 1.30)})
	writePairRun(t, r2, "bbbb", map[string][2][]float64{
		"block/vit_b16": scaled(12, 10e6, 1.20), "vit_b16": scaled(12, 120e6, 1.25)},
		results.BenchFailure{Case: "clip_vit_b16", Backend: "cpu", Batch: 1, Threads: 2, DType: "float32", Error: "no pair: ONNX Runtime cannot export it", NS: true})

	code, out, errOut := vitbench(t, "pairs", r1, r2)
	if code != exitOK {
		t.Fatalf("exit %d without a target, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"| block/vit_b16 | 1 | 1.200× [1.200–1.200] | 1.200× [1.200–1.200] | 1.200× | 1.200× |",
		"| vit_b16 | 1 | 1.100× [1.100–1.100] | 1.250× [1.250–1.250] | 1.100× | 1.175× |",
		"| clip_vit_b16 | 1 | 1.300× [1.300–1.300] | NS: ONNX Runtime cannot export it | 1.300× | 1.300× |",
		"| 1 | " + r1 + " | 2026-12-07T03:00:00Z | aaaa | test-host | 3 |",
		"| 2 | " + r2 + " | 2026-12-07T03:00:00Z | bbbb | test-host | 3 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	// 1.15×: vit_b16 falls short in run 1 and clip_vit_b16 has no pairs in run 2.
	code, out, _ = vitbench(t, "pairs", "-target", "1.15", r1, r2)
	if code != exitFail {
		t.Errorf("-target 1.15: exit %d, want %d", code, exitFail)
	}
	for _, want := range []string{"| 1.200× | 1.200× | 2 of 2 |", "| 1.100× | 1.175× | 1 of 2 (short) |", "| 1.300× | 1.300× | 1 of 2 (short) |"} {
		if !strings.Contains(out, want) {
			t.Errorf("-target 1.15: table lacks %q:\n%s", want, out)
		}
	}
	// Run 2 alone at 1.15×: only the NS case is short.
	if code, _, _ = vitbench(t, "pairs", "-target", "1.15", r2); code != exitFail {
		t.Errorf("-target 1.15 on run 2: exit %d, want %d (an NS case has no ratio to count)", code, exitFail)
	}
	// Run 1 alone at 1.05×: every case reaches it.
	if code, out, _ = vitbench(t, "pairs", "-target", "1.05", r1); code != exitOK {
		t.Errorf("-target 1.05 on run 1: exit %d, want 0:\n%s", code, out)
	}

	// -o writes the same table to a file.
	path := filepath.Join(dir, "pairs-summary.md")
	if code, _, errOut = vitbench(t, "pairs", "-o", path, r1, r2); code != exitOK {
		t.Fatalf("-o: exit %d, stderr %q", code, errOut)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "| vit_b16 | 1 | 1.100×") {
		t.Errorf("-o: %v, file:\n%s", err, b)
	}
}

// TestPairsRejectsWhatIsNotAPairRun: a case with more samples on one side than the other,
// a run without ort.txt, an ort.txt holding vitbench's rows and a bad target are usage
// errors that name the file and what was expected.
func TestPairsRejectsWhatIsNotAPairRun(t *testing.T) {
	dir := t.TempDir()
	uneven := filepath.Join(dir, "uneven")
	s := scaled(10, 9e6, 1.2)
	s[1] = s[1][:9]
	writePairRun(t, uneven, "aaaa", map[string][2][]float64{"block/vit_b16": s})
	noORT := filepath.Join(dir, "no-ort")
	writePairRun(t, noORT, "aaaa", map[string][2][]float64{"vit_b16": scaled(8, 1e8, 1.1)})
	if err := os.Remove(filepath.Join(noORT, "ort.txt")); err != nil {
		t.Fatal(err)
	}
	swapped := filepath.Join(dir, "swapped")
	writePairRun(t, swapped, "aaaa", map[string][2][]float64{"vit_b16": scaled(8, 1e8, 1.1)})
	b, err := os.ReadFile(filepath.Join(swapped, "bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(swapped, "ort.txt"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"pairs", uneven}, []string{filepath.Join(uneven, "bench.txt"), filepath.Join(uneven, "ort.txt"), "block/vit_b16", "10 and 9 samples"}},
		{[]string{"pairs", noORT}, []string{filepath.Join(noORT, "ort.txt")}},
		{[]string{"pairs", swapped}, []string{filepath.Join(swapped, "ort.txt"), `backend "cpu"`}},
		{[]string{"pairs", filepath.Join(dir, "missing")}, []string{filepath.Join(dir, "missing")}},
		{[]string{"pairs", "-target", "-1", uneven}, []string{"-target"}},
		{[]string{"pairs"}, []string{"vitbench pair -o"}},
	} {
		code, _, errOut := vitbench(t, c.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, code, exitUsage, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q does not name %q", c.args, errOut, w)
			}
		}
	}
}
