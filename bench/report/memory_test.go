package report

import (
	"strings"
	"testing"

	"vitbench/bench/results"
)

func TestMemoryTableComparesProcessPeaksPerBatch(t *testing.T) {
	row := func(c, backend string, batch int, peak, rss int64) entry {
		return entry{BenchRow: results.BenchRow{Case: c, Backend: backend, DType: "float32", Batch: batch, Threads: 2,
			MedianNs: 1e6, PeakBytes: peak, RSSBytes: rss}, machine: "m"}
	}
	const mib = 1 << 20
	es := []entry{
		row("vit_b16", "cpu", 1, 300*mib, 400*mib), row("vit_b16", "torch", 1, 0, 800*mib),
		row("vit_b16", "cpu", 8, 350*mib, 500*mib), // no PyTorch row at batch 8
		row("patch_embed/vit_b16", "cpu", 1, mib, 100*mib), row("patch_embed/vit_b16", "torch", 1, 0, 200*mib),
	}
	in := Input{Cases: map[string]CaseInfo{"vit_b16": {Name: "vit_b16", Kind: KindNetwork}, "patch_embed/vit_b16": {Kind: KindComponent}}}
	var sb strings.Builder
	if err := writeMemory(&sb, in, es); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"| vit_b16 | cpu     | float32 |     1 |       2 |              300.0 |                400.0 |                        800.0 |                           0.50 |"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("no row %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "patch_embed") || strings.Contains(out, "| torch") {
		t.Errorf("components or PyTorch rows listed:\n%s", out)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "| vit_b16 | cpu | float32 | 8 | 2 | 350.0 | 500.0 | — | — |") {
		t.Errorf("batch 8 without a PyTorch row is not shown with dashes:\n%s", out)
	}
}
