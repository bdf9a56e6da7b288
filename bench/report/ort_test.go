package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// ortText is a result file as reference/bench_ort.js writes it: rows of backend ort with their
// '# baseline' label, and NS lines with the reason.
const ortText = `goos: linux
cpu: Xeon 8481C
ort-version: 1.30.0
clock: wall
BenchmarkPatch_embed/vit_b16/backend=ort/batch=1/threads=2/dtype=float32 	1	4000000 ns/op	115605504 MACs/op
BenchmarkPatch_embed/vit_b16/backend=ort/batch=1/threads=2/dtype=float32 	1	4000000 ns/op	115605504 MACs/op
BenchmarkPatch_embed/vit_b16/backend=ort/batch=1/threads=2/dtype=float32 	1	4000000 ns/op	115605504 MACs/op
# baseline BenchmarkPatch_embed/vit_b16/backend=ort/batch=1/threads=2/dtype=float32: ONNX Runtime 1.30.0 (onnxruntime-node, CPU execution provider): PatchEmbed at opset 19
BenchmarkVit_b16/backend=ort/batch=1/threads=2/dtype=float32 	1	110000000 ns/op
BenchmarkVit_b16/backend=ort/batch=1/threads=2/dtype=float32 	1	110000000 ns/op
BenchmarkVit_b16/backend=ort/batch=1/threads=2/dtype=float32 	1	110000000 ns/op
# NS BenchmarkVit_b16/backend=ort/batch=8/threads=2/dtype=float32: ONNX Runtime 1.30.0 cannot run it: test reason 8
# NS BenchmarkAttention/vit_b16/backend=ort/batch=1/threads=2/dtype=float32: onnxruntime-node not installed
`

// TestOrtColumns: an ONNX Runtime result file fills the ORT ms and vs ORT columns of the
// components and networks tables (ORT median / ours), its NS cases read NS there with the
// reason in the ONNX Runtime section, not among the timing failures; ORT rows are no rows of
// their own; without ORT data the tables have no ORT columns.
func TestOrtColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ort.txt")
	if err := os.WriteFile(path, []byte(ortText), 0o644); err != nil {
		t.Fatal(err)
	}
	ort, err := results.ReadBench(path)
	if err != nil {
		t.Fatal(err)
	}
	ort.Meta.Machine = "ci"
	in := sampleInput()
	in.Bench = append(in.Bench, ort)
	var buf bytes.Buffer
	if err := Markdown(&buf, in); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	comp := sectionOf(t, md, "Components")
	if !strings.Contains(comp, "| ORT ms ") || !strings.Contains(comp, "| vs ORT ") {
		t.Errorf("components table without ORT columns:\n%s", comp)
	}
	// patch_embed: ORT 4 ms / ours 2 ms = 2.00× (PyTorch's 1.85× still beside it).
	if l, ok := tableLine(comp, "patch_embed/vit_b16", "| cpu ", "| 1.85× ", "| 4 | 2.00× |"); !ok {
		t.Errorf("patch_embed row without ORT 4 ms, 2.00×: %q\n%s", l, comp)
	}
	if l, ok := tableLine(comp, "attention/vit_b16", "| cpu ", "| NS | NS |"); !ok {
		t.Errorf("attention row without NS in the ORT columns: %q\n%s", l, comp)
	}
	if _, ok := tableLine(comp, "patch_embed/vit_b16", "| ort "); ok {
		t.Errorf("ORT rows belong in the ORT columns, not as rows:\n%s", comp)
	}
	// vit_b16: batch 1 ORT 110 ms / ours 100 ms = 1.10×; batch 8 NS.
	nets := sectionOf(t, md, "Networks")
	if l, ok := tableLine(nets, "vit_b16", "| cpu ", "| 1: 110; 8: NS | 1: 1.10×; 8: NS |"); !ok {
		t.Errorf("networks row without the ORT figures: %q\n%s", l, nets)
	}
	sec := sectionOf(t, md, "ONNX Runtime baseline")
	for _, want := range []string{"- ran: ONNX Runtime 1.30.0 (onnxruntime-node, CPU execution provider): PatchEmbed at opset 19",
		"test reason 8", "onnxruntime-node not installed"} {
		if !strings.Contains(sec, want) {
			t.Errorf("ONNX Runtime section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(md, "## Timing failures") && strings.Contains(sectionOf(t, md, "Timing failures"), "| ort ") {
		t.Errorf("ORT's NS cases listed as timing failures:\n%s", md)
	}

	buf.Reset()
	if err := Markdown(&buf, sampleInput()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "ORT") {
		t.Errorf("a report without ONNX Runtime data has ORT columns:\n%s", buf.String())
	}
}
