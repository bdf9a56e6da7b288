package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/results"
)

// TestPairFilesAndTable: pair's two result files hold each case's samples in pair order
// (vitbench's on its backend, ONNX Runtime's as backend ort with the label of what ran)
// and read back; a case ONNX Runtime cannot run is an NS line in both, a case that failed
// before its first pair a failure line, never a missing case; pairs.md gives the median of
// the pair-by-pair ratios ORT / vitbench (not the ratio of the medians) with its interval.
func TestPairFilesAndTable(t *testing.T) {
	bs, err := openBackends("cpu", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(bs)
	nan := math.NaN()
	// Ratios 2, 2, 2, 1.5, 1.5, 1.5, 3: median 2; the ratio of the medians would be 1.5.
	vb := []float64{100, 100, 100, 200, 200, 200, 100}
	ort := []float64{200, 200, 200, 300, 300, 300, 300}
	runs := []int{1, 1, 1, 1, 1, 1, 1}
	c, ok := cases.Lookup("mhsa/vit_s16")
	if !ok {
		t.Fatal("no case mhsa/vit_s16")
	}
	spec, err := c.Spec(1)
	if err != nil {
		t.Fatal(err)
	}
	done := []pairCase{
		{Case: "mhsa/vit_s16", Batch: 1, Spec: spec, DType: bench.Float32, VitbenchNs: vb, OrtNs: ort, VitbenchRuns: runs, OrtRuns: runs,
			VitbenchLoad: 0.01, OrtLoad: nan, OrtLabel: "ONNX Runtime 1.30.0 (test label)", OrtRSS: 1 << 20, Peak: 4096, RSS: 1 << 21},
		{Case: "fold/volo_d1", Batch: 1, DType: bench.Float32, NS: "ONNX Runtime cannot run it: ONNX export failed: a test reason", VitbenchLoad: nan, OrtLoad: nan},
		{Case: "vit_s16", Batch: 1, DType: bench.Float32, Err: "ONNX Runtime: it broke", VitbenchLoad: nan, OrtLoad: nan},
	}
	srv := &ortServer{Version: "1.30.0", CPU: "test CPU", Opset: 19}
	vbFile, ortFile := pairFiles(done, bs[0], 2, "test machine", srv)
	for _, f := range []results.BenchFile{vbFile, ortFile} {
		if r := f.Rows[0]; r.Params != spec.Params() { // the JSON and CSV carry it, not the text
			t.Errorf("%s row: params %d, want the case's %d", r.Backend, r.Params, spec.Params())
		}
	}
	dir := t.TempDir()
	for name, f := range map[string]results.BenchFile{"bench.txt": vbFile, "ort.txt": ortFile} {
		var buf bytes.Buffer
		if err := results.WriteBenchText(&buf, f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := results.ReadBench(path)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, buf.String())
		}
		if len(back.Rows) != 1 || len(back.Failed) != 2 {
			t.Fatalf("%s: %d rows and %d failures, want 1 and 2:\n%s", name, len(back.Rows), len(back.Failed), buf.String())
		}
		r := back.Rows[0]
		wantNs, wantBackend := vb, "cpu"
		if name == "ort.txt" {
			wantNs, wantBackend = ort, ortBackend
			if r.Baseline != "ONNX Runtime 1.30.0 (test label)" {
				t.Errorf("ort.txt: baseline %q", r.Baseline)
			}
		}
		if r.MACs != spec.MACs() {
			t.Errorf("%s: MACs %d, want the case's %d", name, r.MACs, spec.MACs())
		}
		if r.Backend != wantBackend || r.Case != "mhsa/vit_s16" || len(r.SamplesNs) != len(wantNs) {
			t.Fatalf("%s: row %s on %s with %d samples", name, r.Case, r.Backend, len(r.SamplesNs))
		}
		for i := range wantNs {
			if r.SamplesNs[i] != wantNs[i] {
				t.Errorf("%s: sample %d = %v, want %v (pair order)", name, i, r.SamplesNs[i], wantNs[i])
			}
		}
		byCase := map[string]results.BenchFailure{}
		for _, f := range back.Failed {
			byCase[f.Case] = f
		}
		if f := byCase["fold/volo_d1"]; !f.NS || !strings.Contains(f.Error, "a test reason") {
			t.Errorf("%s: fold/volo_d1 %+v, want an NS line with the export's reason", name, f)
		}
		if f := byCase["vit_s16"]; f.NS || !strings.Contains(f.Error, "it broke") {
			t.Errorf("%s: vit_s16 %+v, want a failure line with the error", name, f)
		}
	}
	table := pairsMarkdown(done, "cpu", "abc123", 2, 0, "test machine", srv, "")
	for _, want := range []string{
		"| mhsa/vit_s16 | 1 | 7 | 0.000 | 0.000 | **2.000×** [1.500–3.000] | 1.0% / n/a |",
		"| fold/volo_d1 | 1 | 0 | | | NS: ONNX Runtime cannot run it: ONNX export failed: a test reason | |",
		"| vit_s16 | 1 | 0 | | | FAIL: ONNX Runtime: it broke | |",
		"Machine: test machine (test CPU), 2 threads each side; vitbench commit abc123.",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("pairs.md lacks %q:\n%s", want, table)
		}
	}
}

// TestPairEndToEnd runs `vitbench pair` on a small case with the real exporter, Node and
// onnxruntime-node: each side has its samples, the table its ratio, and `vitbench report`
// reads the two files into an ORT column. Without node it is skipped, except in CI.
func TestPairEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("exports and times with ONNX Runtime")
	}
	if _, err := exec.LookPath("node"); err != nil || !ortWanted("auto", "node", defaultOrtModules()) {
		if os.Getenv("CI") != "" {
			t.Fatal("node with onnxruntime-node is needed (ci/install-deps.sh installs them)")
		}
		t.Skip("node with onnxruntime-node not installed")
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"pair", "-run", "^mhsa/odd_b2_hd20$", "-count", "6", "-rewarm", "0", "-min-sample", "0",
		"-reference", "../../reference", "-o", out, "-threads", "1"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, name := range []string{"bench.txt", "ort.txt"} {
		f, err := results.ReadBench(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Rows) != 1 || len(f.Rows[0].SamplesNs) != 6 || f.Rows[0].Case != "mhsa/odd_b2_hd20" || f.Rows[0].Batch != 2 {
			t.Fatalf("%s: %+v, want one row of 6 samples of mhsa/odd_b2_hd20 at batch 2", name, f.Rows)
		}
		if f.Rows[0].RSSBytes <= 0 {
			t.Errorf("%s: no peak RSS", name)
		}
	}
	table, err := os.ReadFile(filepath.Join(out, "pairs.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(table), "| mhsa/odd_b2_hd20 | 2 | 6 | ") || !strings.Contains(stdout.String(), "ORT / vitbench") {
		t.Errorf("pairs.md:\n%s", table)
	}
	if matches, _ := filepath.Glob(filepath.Join(out, "onnx-*")); len(matches) > 0 {
		t.Errorf("the exported models were left behind: %v", matches)
	}
	stdout.Reset()
	code = run([]string{"report", filepath.Join(out, "bench.txt"), filepath.Join(out, "ort.txt")}, &stdout, &stderr)
	if code != exitOK || !strings.Contains(stdout.String(), "ORT") {
		t.Errorf("report of the pair files: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
}
