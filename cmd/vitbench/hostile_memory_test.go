package main

import (
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// hugeCases are 1 KB case.json files whose params imply tensors far beyond any memory:
// each used to end in Go's "fatal error: runtime: out of memory", losing every row.
var hugeCases = map[string]string{
	"patch_embed": `{"format_version": 1, "name": "patch_embed/huge", "kind": "component", "op": "patch_embed", "batch": 1,
 "dtype": "float32", "tolerance": "gemm", "params": {"in_chans": 3, "embed_dim": 8, "patch_size": [16, 16], "img_size": [100000, 100000]},
 "inputs": {"x": [1, 3, 100000, 100000]}, "weights": {"proj.weight": [8, 3, 16, 16], "proj.bias": [8]}, "outputs": {"out": [1, 39062500, 8]}}`,
	"gemm": `{"format_version": 1, "name": "gemm/huge", "kind": "component", "op": "gemm", "batch": 1, "dtype": "float32",
 "tolerance": "gemm", "params": {"m": 16777216, "n": 16384, "k": 4},
 "inputs": {"x": [1, 16777216, 4]}, "weights": {"weight": [16384, 4], "bias": [16384]}, "outputs": {"out": [1, 16777216, 16384]}}`,
	// 2^48 output elements: make() used to panic "makeslice: len out of range", shown as an
	// internal error.
	"gemm_square": `{"format_version": 1, "name": "gemm/square", "kind": "component", "op": "gemm", "batch": 1, "dtype": "float32",
 "tolerance": "gemm", "params": {"m": 16777216, "n": 16777216, "k": 1},
 "inputs": {"x": [1, 16777216, 1]}, "weights": {"weight": [16777216, 1], "bias": [16777216]}, "outputs": {"out": [1, 16777216, 16777216]}}`,
	"mhsa": `{"format_version": 1, "name": "mhsa/huge", "kind": "component", "op": "mhsa", "batch": 1, "dtype": "float32",
 "tolerance": "gemm", "params": {"tokens": 1048576, "dim": 8, "heads": 1},
 "inputs": {"x": [1, 1048576, 8]}, "weights": {"qkv.weight": [24, 8], "qkv.bias": [24], "proj.weight": [8, 8], "proj.bias": [8]},
 "outputs": {"out": [1, 1048576, 8]}}`,
}

// TestHostileHugeParams: cases whose params imply enormous tensors are FAIL rows naming
// the case, its need and the budget, refused before anything is allocated (also with
// -max-array-bytes 1, which used to be checked only after the tensors were allocated);
// the good case beside them is OK and the exit status is 1 (2 when an array is over
// -max-array-bytes: an input error).
func TestHostileHugeParams(t *testing.T) {
	root := hostileTree(t)
	for op, js := range hugeCases {
		writeCase(t, filepath.Join(root, "huge_"+op), js)
	}
	r, rows := checkRows(t, root)
	wantExit(t, r, 1, "check")
	for _, name := range []string{"patch_embed/huge", "gemm/huge", "gemm/square", "mhsa/huge"} {
		wantFailRow(t, rows, name, "case "+name+" needs", "more than the budget of", "-max-bytes", "not run")
	}
	if len(rows) != 5 {
		t.Errorf("%d rows, want 5: %v", len(rows), rowNames(rows))
	}

	// Over an explicit budget, and with every array over -max-array-bytes 1: the good
	// case is an input error now, and still has its row.
	js := filepath.Join(t.TempDir(), "check.json")
	r = runHostile(t, runOpts{dir: root}, "check", "-fixtures", root, "-json", js, "-max-array-bytes", "1", "-max-bytes", "64M")
	wantExit(t, r, 2, "check -max-array-bytes 1")
	cf, err := results.ReadCheck(js)
	if err != nil || len(cf.Rows) != 5 {
		t.Fatalf("check -max-array-bytes 1: %d rows (%v), want 5", len(cf.Rows), err)
	}
	for _, row := range cf.Rows {
		switch {
		case row.Case == goodFixture:
			wantIn(t, "the good case's reason", row.Reason, `declares inputs array "x"`, "more than the limit of 1 bytes", "-max-array-bytes")
		default:
			wantIn(t, row.Case+"'s reason", row.Reason, "more than the budget of 64.0 MiB")
		}
	}
}

// TestHostileAttentionScratch: an mhsa case of 2 MiB of inputs whose attention scores
// would take 16 GiB is refused by the budget, which counts the scratch.
func TestHostileAttentionScratch(t *testing.T) {
	root := hostileTree(t)
	writeCase(t, filepath.Join(root, "scratch"), `{"format_version": 1, "name": "mhsa/scratch", "kind": "component", "op": "mhsa",
 "batch": 1, "dtype": "float32", "tolerance": "gemm", "params": {"tokens": 65536, "dim": 8, "heads": 1},
 "inputs": {"x": [1, 65536, 8]}, "weights": {"qkv.weight": [24, 8], "qkv.bias": [24], "proj.weight": [8, 8], "proj.bias": [8]},
 "outputs": {"out": [1, 65536, 8]},
 "synth": {"seed": 1, "arrays": {"x": {"center": 0, "scale": 1}, "qkv.weight": {"center": 0, "scale": 0.3},
  "qkv.bias": {"center": 0, "scale": 0.02}, "proj.weight": {"center": 0, "scale": 0.3}, "proj.bias": {"center": 0, "scale": 0.02}}}}`)
	r, rows := checkRows(t, root)
	wantExit(t, r, 1, "check")
	wantFailRow(t, rows, "mhsa/scratch", "needs 16.0 GiB", "scratch 16.0 GiB", "inputs 2.0 MiB")
}

// TestHostileBatchFlags: bench -batch 10000, agree -batch 100000 and peak -mem-mib
// 100000000 used to crash out of memory with neither -o nor -json written. Now a case
// over the budget is a failure naming it (the others are timed and written), and peak
// refuses the size up front.
func TestHostileBatchFlags(t *testing.T) {
	dir := t.TempDir()
	txt, js := filepath.Join(dir, "bench.txt"), filepath.Join(dir, "bench.json")
	const run = "^(layernorm/odd_b2_d147|vit_b16)$"
	r := runHostile(t, runOpts{dir: dir}, "bench", "-batch", "10000", "-run", run, "-count", "2", "-warmup", "0",
		"-min-sample", "0", "-o", txt, "-json", js)
	wantExit(t, r, 1, "bench -batch 10000")
	for _, p := range []string{txt, js} {
		bf, err := results.ReadBench(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(bf.Rows) != 1 || bf.Rows[0].Case != "layernorm/odd_b2_d147" || bf.Rows[0].Batch != 10000 {
			t.Errorf("%s: rows %+v, want layernorm/odd_b2_d147 at batch 10000", p, bf.Rows)
		}
		if len(bf.Failed) != 1 || bf.Failed[0].Case != "vit_b16" {
			t.Fatalf("%s: failures %+v, want vit_b16", p, bf.Failed)
		}
		wantIn(t, p+": vit_b16's error", bf.Failed[0].Error, "case vit_b16 needs", "more than the budget", "-max-bytes")
	}

	ajs := filepath.Join(dir, "agree.json")
	r = runHostile(t, runOpts{dir: dir}, "agree", "-ref", "cpu", "-backend", "cpu", "-batch", "100000", "-run", run, "-json", ajs)
	wantExit(t, r, 1, "agree -batch 100000")
	cf, err := results.ReadCheck(ajs)
	if err != nil || len(cf.Rows) != 2 {
		t.Fatalf("agree -json: %d rows (%v), want 2", len(cf.Rows), err)
	}
	for _, row := range cf.Rows {
		if row.Status != "FAIL" || !strings.Contains(row.Reason, "case "+row.Case+" needs") || !strings.Contains(row.Reason, "budget") {
			t.Errorf("agree row %s: %s %q, want FAIL over the budget", row.Case, row.Status, row.Reason)
		}
	}

	r = runHostile(t, runOpts{dir: dir}, "peak", "-mem-mib", "100000000")
	wantExit(t, r, 2, "peak -mem-mib 100000000")
	wantIn(t, "peak's message", r.stderr, "-mem-mib 100000000", "need 95.4 TiB", "more than the memory budget", "-max-bytes")
}
