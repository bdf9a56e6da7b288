package report

import (
	"bytes"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// TestArrangementMarked: a speed-up whose two sides were timed with cross-CPU round trips
// more than 2× apart (vitbench at 60 ns, PyTorch at 370) carries § in the networks table,
// the footnote names both round trips, and the header gives the run's range; pairs that
// agree (61 and 64 ns) are not marked, and a report without probes has neither.
func TestArrangementMarked(t *testing.T) {
	in := sampleInput()
	in.Bench[0].Rows[2].Load = &results.RowLoad{Foreign: 0.01, RoundTripNs: 60}  // vit_b16 batch 1
	in.Bench[1].Rows[1].Load = &results.RowLoad{Foreign: 0.01, RoundTripNs: 370} // PyTorch vit_b16 batch 1
	in.Bench[0].Rows[0].Load = &results.RowLoad{Foreign: 0.01, RoundTripNs: 61}  // patch_embed/vit_b16
	in.Bench[1].Rows[0].Load = &results.RowLoad{Foreign: 0.01, RoundTripNs: 64}  // its PyTorch row
	var buf bytes.Buffer
	if err := Markdown(&buf, in); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	nets := sectionOf(t, md, "Networks")
	if _, ok := tableLine(nets, "vit_b16", "| cpu ", "§"); !ok {
		t.Errorf("networks: no § on vit_b16's speed-up:\n%s", nets)
	}
	if !strings.Contains(nets, "vit_b16 on cpu 60 ns against torch 370 ns") {
		t.Errorf("networks: no footnote with both round trips:\n%s", nets)
	}
	comp := sectionOf(t, md, "Components")
	if strings.Contains(comp, "§") {
		t.Errorf("components: § on a pair whose round trips agree:\n%s", comp)
	}
	if !strings.Contains(md, "- Cross-CPU round trip: 60–370 ns over 4 rows (the CPUs' arrangement changed") {
		t.Errorf("header without the round-trip line:\n%s", md[:min(len(md), 900)])
	}
	buf.Reset()
	if err := Markdown(&buf, sampleInput()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "§") || strings.Contains(buf.String(), "Cross-CPU") {
		t.Errorf("a report without probes shows them:\n%s", buf.String())
	}
}
