package report

import (
	"strings"
	"testing"

	"vitbench/bench/results"
)

func TestConformanceFoldsBackendsThatRanNothing(t *testing.T) {
	var rows []results.CheckRow
	for _, c := range []string{"a", "b", "c", "d"} {
		rows = append(rows,
			results.CheckRow{Case: c, Backend: "cpu", DType: "float32", Status: results.StatusOK},
			results.CheckRow{Case: c, Backend: "cuda", DType: "float32", Status: results.StatusNS, Reason: "NVIDIA driver not found"})
	}
	// A backend that ran some cases keeps every row, NS ones included.
	rows = append(rows,
		results.CheckRow{Case: "a", Backend: "half", DType: "float32", Status: results.StatusOK},
		results.CheckRow{Case: "b", Backend: "half", DType: "float32", Status: results.StatusNS, Reason: "op b not supported"},
		results.CheckRow{Case: "c", Backend: "half", DType: "float32", Status: results.StatusNS, Reason: "op b not supported"},
		results.CheckRow{Case: "d", Backend: "half", DType: "float32", Status: results.StatusNS, Reason: "op b not supported"})
	var sb strings.Builder
	if err := writeConformance(&sb, Input{Check: []results.CheckFile{{Rows: rows}}}, nil); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	if strings.Contains(out, "| cuda ") {
		t.Errorf("rows of the idle backend cuda are listed:\n%s", out)
	}
	if got := strings.Count(out, "| half "); got != 4 {
		t.Errorf("%d rows of backend half, want all 4:\n%s", got, out)
	}
	for _, want := range []string{"5 OK, 0 FAIL, 7 NS", "Not run on backend cuda: all 4 cases NS (rows left out above): NVIDIA driver not found"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
