package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench/npy"
	"vitbench/bench/results"
)

// TestBenchWeightsMisfitIsFailRow: weights that fit one case and not another time the first
// and make the second a FAIL row whose error names the array with its shape and the shape
// the case needs; the results (text, JSON) and the report name the weights file's SHA-256.
func TestBenchWeightsMisfitIsFailRow(t *testing.T) {
	dir := t.TempDir()
	wpath := filepath.Join(dir, "ln768.npz")
	ones := make([]float32, 768)
	for i := range ones {
		ones[i] = 1
	}
	if err := npy.WriteNPZ(wpath, map[string]*npy.Array{"weight": {Shape: []int{768}, Data: ones}, "bias": {Shape: []int{768}, Data: make([]float32, 768)}}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(wpath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	want := hex.EncodeToString(sum[:])
	txt, js := filepath.Join(dir, "b.txt"), filepath.Join(dir, "b.json")
	code, _, stderr := vitbench(t, "bench", "-run", "^layernorm/(odd_b2_d147|vit_b16)$", "-count", "2", "-min-sample", "0",
		"-threads", "1", "-weights", wpath, "-o", txt, "-json", js)
	if code != exitFail {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	for _, p := range []string{txt, js} {
		bf, err := results.ReadBench(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(bf.Rows) != 1 || bf.Rows[0].Case != "layernorm/vit_b16" {
			t.Errorf("%s: rows %v, want layernorm/vit_b16 timed", p, bf.Rows)
		}
		if len(bf.Failed) != 1 || bf.Failed[0].Case != "layernorm/odd_b2_d147" ||
			!strings.Contains(bf.Failed[0].Error, "weight has shape [768], the layernorm op needs [147]") {
			t.Errorf("%s: failures %+v, want layernorm/odd_b2_d147 naming weight [768] against [147]", p, bf.Failed)
		}
		if got := bf.Meta.Extra[results.WeightsKey]; got != want {
			t.Errorf("%s: weights SHA-256 %q, want %s", p, got, want)
		}
	}
	code, md, stderr := vitbench(t, "report", txt)
	if code != exitOK || !strings.Contains(md, "- Weights: SHA-256 "+want) || !strings.Contains(md, "layernorm/odd_b2_d147") {
		t.Errorf("report (exit %d) without the weights' SHA-256 or the FAIL row:\n%s\n%s", code, md, stderr)
	}
}
