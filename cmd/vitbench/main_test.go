package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench/npy"
	"vitbench/bench/results"
)

const fixtureRoot = "../../fixtures"

// vitbench runs the CLI in-process and returns its exit code and output.
func vitbench(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckCommittedFixtures(t *testing.T) {
	js := filepath.Join(t.TempDir(), "check.json")
	code, out, stderr := vitbench(t, "check", "-fixtures", fixtureRoot, "-run", notLargeRun(), "-json", js)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	cf, err := results.ReadCheck(js)
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Rows) < 18 {
		t.Fatalf("%d rows", len(cf.Rows))
	}
	for _, r := range cf.Rows {
		if r.Status != "OK" {
			t.Errorf("%s: %s %s", r.Case, r.Status, r.Reason)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("%d OK, 0 FAIL, 0 NS", len(cf.Rows))) {
		t.Errorf("summary line missing:\n%s", out)
	}
}

func TestCheckAllBackendsReportsNS(t *testing.T) {
	code, out, _ := vitbench(t, "check", "-fixtures", fixtureRoot, "-backend", "all", "-run", "rect")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "| cuda") || !strings.Contains(out, "NS") {
		t.Errorf("no NS rows for cuda:\n%s", out)
	}
}

// copyDir copies a fixture directory.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// editJSON rewrites dir/case.json through f.
func editJSON(t *testing.T, dir string, f func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "case.json")
	raw, _ := os.ReadFile(p)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	raw, _ = json.Marshal(m)
	os.WriteFile(p, raw, 0o644)
}

// TestBadInputs: each broken fixture gets its own clear message naming the
// file, the check exits 2, and the good case beside it still runs and is OK.
func TestBadInputs(t *testing.T) {
	good := filepath.Join(fixtureRoot, "soft_split", "odd_c5_k3_s2_p1")
	outShape := []int{1, 180, 45}
	cases := []struct {
		name, want string
		code       int
		breakIt    func(t *testing.T, dir string)
	}{
		{"truncated npz", "outputs.npz", 2, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "outputs.npz")
			raw, _ := os.ReadFile(p)
			os.WriteFile(p, raw[:len(raw)/2], 0o644)
		}},
		{"missing array", `missing array "out"`, 2, func(t *testing.T, dir string) {
			npy.WriteNPZ(filepath.Join(dir, "outputs.npz"), map[string]*npy.Array{"other": {Shape: []int{1}, Data: []float32{0}}})
		}},
		{"wrong dtype", "dtype <f8", 2, func(t *testing.T, dir string) {
			raw, _ := os.ReadFile("../../bench/npy/testdata/f64.npy")
			os.Remove(filepath.Join(dir, "outputs.npz"))
			os.MkdirAll(filepath.Join(dir, "outputs"), 0o755)
			os.WriteFile(filepath.Join(dir, "outputs", "out.npy"), raw, 0o644)
		}},
		{"wrong shape", "has shape [1, 180, 44]", 2, func(t *testing.T, dir string) {
			npy.WriteNPZ(filepath.Join(dir, "outputs.npz"), map[string]*npy.Array{"out": {Shape: []int{1, 180, 44}, Data: make([]float32, 180*44)}})
		}},
		{"declared shape disagrees with params", "declares shape", 2, func(t *testing.T, dir string) {
			editJSON(t, dir, func(m map[string]any) { m["outputs"] = map[string]any{"out": []int{1, 2, 3}} })
		}},
		{"unknown op kind", `unknown op kind "conv9d"`, 2, func(t *testing.T, dir string) {
			editJSON(t, dir, func(m map[string]any) { m["op"] = "conv9d" })
		}},
		{"unknown param", `unknown field "kernel"`, 2, func(t *testing.T, dir string) {
			editJSON(t, dir, func(m map[string]any) { m["params"].(map[string]any)["kernel"] = 3 })
		}},
		{"huge header", "more than the limit", 2, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "outputs.npz"))
			os.MkdirAll(filepath.Join(dir, "outputs"), 0o755)
			hdr := "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 180, 2000000000), }"
			raw := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)+1), 0)
			raw = append(append(raw, hdr...), '\n')
			os.WriteFile(filepath.Join(dir, "outputs", "out.npy"), raw, 0o644)
		}},
		{"corrupt json", "case.json", 2, func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "case.json"), []byte(`{"format_version": 1, "name": `), 0o644)
		}},
		{"format version", "format_version 7", 2, func(t *testing.T, dir string) {
			editJSON(t, dir, func(m map[string]any) { m["format_version"] = 7 })
		}},
		{"duplicate name", "duplicate case name", 2, func(t *testing.T, dir string) {
			editJSON(t, dir, func(m map[string]any) { m["name"] = "soft_split/odd_c5_k3_s2_p1" })
		}},
		{"wrong values", "FAIL", 1, func(t *testing.T, dir string) {
			data := make([]float32, 180*45)
			npy.WriteNPZ(filepath.Join(dir, "outputs.npz"), map[string]*npy.Array{"out": {Shape: outShape, Data: data}})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			copyDir(t, good, filepath.Join(root, "a_good"))
			bad := filepath.Join(root, "b_bad")
			copyDir(t, good, bad)
			editJSON(t, bad, func(m map[string]any) { m["name"] = "soft_split/broken" })
			c.breakIt(t, bad)
			js := filepath.Join(root, "check.json")
			code, out, stderr := vitbench(t, "check", "-fixtures", root, "-json", js)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out, stderr)
			}
			if strings.Contains(out+stderr, "goroutine ") || strings.Contains(out+stderr, "panic") {
				t.Fatalf("stack trace in output:\n%s%s", out, stderr)
			}
			cf, err := results.ReadCheck(js)
			if err != nil {
				t.Fatal(err)
			}
			if len(cf.Rows) != 2 || cf.Rows[0].Status != "OK" || cf.Rows[1].Status != "FAIL" {
				t.Fatalf("rows %+v", cf.Rows)
			}
			msg := cf.Rows[1].Reason + " " + cf.Rows[1].Status
			if !strings.Contains(msg, c.want) {
				t.Errorf("reason %q lacks %q", msg, c.want)
			}
			if c.code == 2 && !strings.Contains(msg, root) && c.name != "duplicate name" {
				t.Errorf("reason %q does not name the fixture path", msg)
			}
		})
	}
}

func TestCheckUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"check", "-fixtures", t.TempDir()},
		{"check", "-fixtures", "/nonexistent/dir"},
		{"check", "-backend", "tpu"},
		{"check", "-run", "("},
		{"check", "-isa", "avx9000"},
		{"nosuchcommand"},
		{"compare", "only-one-file"},
		{"report"},
	} {
		if code, _, _ := vitbench(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestManifestMismatchFails(t *testing.T) {
	root := t.TempDir()
	copyDir(t, filepath.Join(fixtureRoot, "soft_split", "dil2_k3"), filepath.Join(root, "soft_split", "dil2_k3"))
	os.WriteFile(filepath.Join(root, "MANIFEST.sha256"), []byte(strings.Repeat("0", 64)+"  soft_split/dil2_k3/case.json\n"), 0o644)
	code, out, _ := vitbench(t, "check", "-fixtures", root)
	if code != 2 || !strings.Contains(out, "manifest mismatch") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestBenchWritesReadableResults(t *testing.T) {
	dir := t.TempDir()
	txt, js := filepath.Join(dir, "b.txt"), filepath.Join(dir, "b.json")
	code, _, stderr := vitbench(t, "bench", "-run", "rect", "-count", "3", "-warmup", "1", "-o", txt, "-json", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, p := range []string{txt, js} {
		bf, err := results.ReadBench(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(bf.Rows) != 2 || bf.Rows[0].N != 3 || bf.Rows[0].MedianNs <= 0 || bf.Rows[0].Backend != "cpu" {
			t.Fatalf("%s: rows %+v", p, bf.Rows)
		}
	}
	code, out, _ := vitbench(t, "report", txt)
	if code != 0 || !strings.Contains(out, "patch_embed/rect_p8x4") {
		t.Errorf("report exit %d:\n%s", code, out)
	}
	if code, _, _ := vitbench(t, "compare", txt, txt); code != 0 {
		t.Errorf("compare of a file with itself: exit %d", code)
	}
}

func TestListAndInfo(t *testing.T) {
	code, out, _ := vitbench(t, "list", "-json")
	if code != 0 {
		t.Fatal(code)
	}
	var l struct {
		Cases []caseListing `json:"cases"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Cases) < 13 {
		t.Fatalf("%v %d", err, len(l.Cases))
	}
	code, out, _ = vitbench(t, "info")
	if code != 0 || !strings.Contains(out, "isa path:") || !strings.Contains(out, "cuda") {
		t.Errorf("info exit %d:\n%s", code, out)
	}
}

// TestCompareGatesRegression: a 20% slowdown over 10 samples exits 1, a
// MACs change exits 1, identical files exit 0.
func TestCompareGatesRegression(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, scale float64, macs int64) string {
		var samples []float64
		for i := 0; i < 10; i++ {
			samples = append(samples, scale*(1e6+float64(i%5)*1e4))
		}
		bf := results.BenchFile{Meta: results.Meta{Tool: "vitbench"}, Rows: []results.BenchRow{
			results.NewBenchRow("patch_embed/vit_b16", "cpu", 1, 2, "float32", macs, 1000, 0, 0, samples, nil)}}
		p := filepath.Join(dir, name)
		f, _ := os.Create(p)
		defer f.Close()
		if err := results.WriteBenchText(f, bf); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base, slow, macs := write("base.txt", 1, 100), write("slow.txt", 1.2, 100), write("macs.txt", 1, 101)
	if code, out, _ := vitbench(t, "compare", base, slow); code != 1 {
		t.Errorf("20%% slowdown: exit %d\n%s", code, out)
	}
	if code, _, _ := vitbench(t, "compare", base, macs); code != 1 {
		t.Errorf("MACs change: exit %d", code)
	}
	if code, _, _ := vitbench(t, "compare", "-threshold", "0.5", base, slow); code != 0 {
		t.Errorf("slowdown under the threshold: exit %d", code)
	}
}

// TestBenchWithWeights: -weights reads the weights by state_dict name; an
// archive with a wrong shape and a missing array is the case's FAIL with both
// listed, exit 1.
func TestBenchWithWeights(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.npz"), filepath.Join(dir, "bad.npz")
	w := make([]float32, 37*29)
	for i := range w {
		w[i] = float32(i%7) / 7
	}
	npy.WriteNPZ(good, map[string]*npy.Array{"weight": {Shape: []int{37, 29}, Data: w},
		"bias": {Shape: []int{37}, Data: make([]float32, 37)}, "unused": {Shape: []int{1}, Data: []float32{1}}})
	npy.WriteNPZ(bad, map[string]*npy.Array{"weight": {Shape: []int{29, 37}, Data: w}})
	out := filepath.Join(dir, "b.txt")
	if code, _, stderr := vitbench(t, "bench", "-run", "^gemm/odd_m13_n37_k29$", "-count", "2", "-min-sample", "0", "-weights", good, "-o", out); code != 0 {
		t.Fatalf("good weights: exit %d: %s", code, stderr)
	}
	code, _, stderr := vitbench(t, "bench", "-run", "^gemm/odd_m13_n37_k29$", "-count", "2", "-weights", bad, "-o", out)
	if code != 1 || !strings.Contains(stderr, "weight has shape [29, 37]") || !strings.Contains(stderr, "missing bias") {
		t.Errorf("bad weights: exit %d: %s", code, stderr)
	}
}
