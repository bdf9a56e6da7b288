package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// TestParseBatches: -batch is a comma list of sizes from 1 to maxRunBatch, repeats dropped;
// empty means each case's own batch (one entry, 0); anything else is a usage error.
func TestParseBatches(t *testing.T) {
	for in, want := range map[string][]int{"": {0}, " ": {0}, "1": {1}, "1,8": {1, 8}, "8, 1,8": {8, 1}} {
		got, err := parseBatches(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseBatches(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "1,,8", "x", "1025", "1;8"} {
		if got, err := parseBatches(in); err == nil {
			t.Errorf("parseBatches(%q) = %v, want an error", in, got)
		}
	}
	if got := batchArgs(0); got != nil {
		t.Errorf("batchArgs(0) = %v, want none", got)
	}
	if got := batchArgs(8); !slices.Equal(got, []string{"--batch", "8"}) {
		t.Errorf("batchArgs(8) = %v", got)
	}
}

// fakeTorchScript writes, in dir, a stand-in for bench_torch.py (run by /bin/sh) that
// appends its arguments as one line to the returned log, then writes an empty result file
// where -o says.
func fakeTorchScript(t *testing.T, dir string) (script, argsLog string) {
	t.Helper()
	argsLog = filepath.Join(dir, "args.txt")
	script = filepath.Join(dir, "fake_torch.sh")
	body := "echo \"$@\" >> " + argsLog + "\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then : > \"$2\"; fi; shift; done\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return script, argsLog
}

// TestRunAtSeveralBatches: `run -batch 1,3` times every case at both batches and runs the
// PyTorch baseline once per batch with --batch (a stand-in script records its arguments).
func TestRunAtSeveralBatches(t *testing.T) {
	dir := t.TempDir()
	script, argsLog := fakeTorchScript(t, dir)
	out := filepath.Join(dir, "run")
	const name = "layernorm/odd_b2_d147"
	code, _, stderr := vitbench(t, "run", "-full", "-o", out, "-fixtures", fixtureRoot, "-run", "^"+name+"$",
		"-torch", "on", "-python", "/bin/sh", "-torch-script", script, "-batch", "1,3",
		"-count", "2", "-min-sample", "0", "-threads", "1")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	bf, err := results.ReadBench(filepath.Join(out, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	batches := map[string][]int{}
	for _, r := range bf.Rows {
		if r.Case == name {
			batches[r.Backend] = append(batches[r.Backend], r.Batch)
		}
	}
	if got := batches["cpu"]; !slices.Equal(got, []int{1, 3}) {
		t.Errorf("cpu rows of %s at batches %v, want [1 3] (all rows: %v)", name, got, batches)
	}
	raw, err := os.ReadFile(argsLog)
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(calls) != 2 || !strings.HasSuffix(calls[0], "--batch 1") || !strings.HasSuffix(calls[1], "--batch 3") {
		t.Errorf("PyTorch baseline calls:\n%s\nwant two, ending --batch 1 and --batch 3", raw)
	}
	if code, _, _ := vitbench(t, "run", "-o", filepath.Join(dir, "bad"), "-batch", "0", "-torch", "off"); code != exitUsage {
		t.Errorf("-batch 0 exits %d, want %d", code, exitUsage)
	}
}

// TestRunKeepsBaselineRowsWhenACaseFailed: bench_torch.py exits 1 when one case raised, after
// writing every other case's rows and the failed case's "# FAILED" line; run keeps that file
// (torch.txt holds both) instead of dropping the whole group's PyTorch column. An exit 1
// without the file written (an uncaught exception) still drops it, whatever part file an
// earlier run left.
func TestRunKeepsBaselineRowsWhenACaseFailed(t *testing.T) {
	dir := t.TempDir()
	const name = "layernorm/odd_b2_d147"
	row := results.NewBenchRow(name, "torch", 2, 1, "float32", 1, 1, 0, 0, []float64{1000, 1100, 1200}, nil)
	var text bytes.Buffer
	if err := results.WriteBenchText(&text, results.BenchFile{Rows: []results.BenchRow{row}}); err != nil {
		t.Fatal(err)
	}
	text.WriteString("# FAILED BenchmarkLayernorm/other/backend=torch/batch=1/threads=1/dtype=float32: RuntimeError: boom\n")
	for _, tc := range []struct {
		write bool
		keep  bool
	}{{true, true}, {false, false}} {
		payload := filepath.Join(dir, "payload.txt")
		if err := os.WriteFile(payload, text.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		body := "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then out=\"$2\"; fi; shift; done\n"
		if tc.write {
			body += "cp " + payload + " \"$out\"\n"
		}
		body += "exit 1\n"
		script := filepath.Join(dir, "fake_torch.sh")
		if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, fmt.Sprintf("run-%v", tc.write))
		if !tc.write {
			// A part file left over from an earlier run must not pass for this one's.
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, "torch.txt.part"), text.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, _, stderr := vitbench(t, "run", "-full", "-o", out, "-fixtures", fixtureRoot, "-run", "^"+name+"$",
			"-torch", "auto", "-python", "/bin/sh", "-torch-script", script, "-count", "2", "-min-sample", "0", "-threads", "1")
		if code != exitOK {
			t.Fatalf("write %v: exit %d\n%s", tc.write, code, stderr)
		}
		got, err := os.ReadFile(filepath.Join(out, "torch.txt"))
		if kept := err == nil && bytes.Contains(got, []byte("backend=torch")) && bytes.Contains(got, []byte("# FAILED")); kept != tc.keep {
			t.Errorf("script wrote its file: %v; torch.txt kept %v, want %v (%v)\n%s\n%s", tc.write, kept, tc.keep, err, got, stderr)
		}
	}
}
