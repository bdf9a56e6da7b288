package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"vitbench/bench/results"
)

// TestOrtWanted: -ort on always times ONNX Runtime, off never, auto only when node is found
// and the modules folder holds onnxruntime-node.
func TestOrtWanted(t *testing.T) {
	mods := t.TempDir()
	if ortWanted("auto", "sh", mods) {
		t.Errorf("auto with no onnxruntime-node in %s: wanted", mods)
	}
	if err := os.MkdirAll(filepath.Join(mods, "onnxruntime-node"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mods, "onnxruntime-node", "package.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode, node string
		want       bool
	}{{"auto", "sh", true}, {"auto", "/no/such/node", false}, {"on", "/no/such/node", true}, {"off", "sh", false}} {
		if got := ortWanted(c.mode, c.node, mods); got != c.want {
			t.Errorf("ortWanted(%q, %q) = %v, want %v", c.mode, c.node, got, c.want)
		}
	}
}

// TestRunOrtWithoutNode: without node every case of the group is an NS line of backend ort
// saying onnxruntime-node is not installed, and the file reads back as such.
func TestRunOrtWithoutNode(t *testing.T) {
	cfg := ortConfig{python: "/usr/bin/python3", refDir: "../../reference", node: "/no/such/node", threads: 2, count: 1,
		work: t.TempDir()}
	raw, err := runOrt(nil, cfg, regexp.MustCompile(`^(fold/volo_d1|mhsa/vit_s16)$`), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ort.txt")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := results.ReadBench(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if len(f.Failed) != 2 || len(f.Rows) != 0 {
		t.Fatalf("read %d rows and failures %+v, want 2 NS lines:\n%s", len(f.Rows), f.Failed, raw)
	}
	for _, x := range f.Failed {
		if !x.NS || x.Backend != ortBackend || x.Threads != 2 || x.Batch != 1 || !regexp.MustCompile(`^onnxruntime-node not installed \(node not found`).MatchString(x.Error) {
			t.Errorf("failure %+v, want an NS line of backend ort saying onnxruntime-node is not installed", x)
		}
	}
}
