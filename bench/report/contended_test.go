package report

import (
	"bytes"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// TestContendedRowsMarked: a row timed under foreign load carries ‡ in the components and
// networks tables (its own or its PyTorch row's), the note under the table names it with its
// load and re-time, the header counts them, and a report without contention has no mark; the
// header names the weights' SHA-256 when a file records one.
func TestContendedRowsMarked(t *testing.T) {
	in := sampleInput()
	in.Bench[0].Rows[0].Load = &results.RowLoad{Foreign: 0.37, Contended: true}                                         // patch_embed/vit_b16 on cpu
	in.Bench[0].Rows[2].Load = &results.RowLoad{Foreign: 0.02, Retimed: true, FirstForeign: 0.41, FirstContended: true} // vit_b16 batch 1
	in.Bench[1].Rows[1].Load = &results.RowLoad{Foreign: 0.25, Contended: true}                                         // PyTorch vit_b16 batch 1
	in.Bench[0].Meta.Extra = map[string]string{results.WeightsKey: "ab12cd"}
	var buf bytes.Buffer
	if err := Markdown(&buf, in); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	comp := sectionOf(t, md, "Components")
	if _, ok := tableLine(comp, "patch_embed/vit_b16", "| cpu ", "contended ‡"); !ok {
		t.Errorf("components: no contended mark on patch_embed/vit_b16:\n%s", comp)
	}
	if !strings.Contains(comp, "‡ Timed while other processes used more than 10% of the CPUs") || !strings.Contains(comp, "patch_embed/vit_b16 on cpu 37%") {
		t.Errorf("components: no footnote naming the row and its load:\n%s", comp)
	}
	nets := sectionOf(t, md, "Networks")
	if _, ok := tableLine(nets, "vit_b16", "| cpu ", "‡"); !ok {
		t.Errorf("networks: no mark for vit_b16's contended PyTorch row:\n%s", nets)
	}
	if !strings.Contains(nets, "vit_b16 on cpu 2% (re-timed; first attempt 41%)") || !strings.Contains(nets, "vit_b16 on torch 25%") {
		t.Errorf("networks: footnote without the re-time or the PyTorch row:\n%s", nets)
	}
	if !strings.Contains(md, "- Contention: 2 of 3 rows timed under more than 10% foreign CPU load (marked ‡), 1 re-timed") {
		t.Errorf("header without the contention line:\n%s", md[:min(len(md), 800)])
	}
	if !strings.Contains(md, "- Weights: SHA-256 ab12cd") {
		t.Errorf("header without the weights' SHA-256:\n%s", md[:min(len(md), 800)])
	}
	buf.Reset()
	if err := Markdown(&buf, sampleInput()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "‡") || strings.Contains(buf.String(), "Weights:") {
		t.Errorf("a report without contention or real weights shows them:\n%s", buf.String())
	}
}
