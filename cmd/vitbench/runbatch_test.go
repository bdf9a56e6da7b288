package main

import (
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

// TestRunAtSeveralBatches: `run -batch 1,3` times every case at both batches and runs the
// PyTorch baseline once per batch with --batch (a stand-in script records its arguments).
func TestRunAtSeveralBatches(t *testing.T) {
	dir := t.TempDir()
	argsLog := filepath.Join(dir, "args.txt")
	script := filepath.Join(dir, "fake_torch.sh")
	// Records its arguments, then writes an empty result file where -o says.
	body := "echo \"$@\" >> " + argsLog + "\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then : > \"$2\"; fi; shift; done\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
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
