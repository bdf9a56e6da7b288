package main

import (
	"encoding/json"
	"testing"
)

// TestListDETR: `vitbench list` shows the DETR built-ins with the
// original's parameter counts (docs/reference-notes.md, DETR): the
// detectors' PyTorch parameters() and the transformer alone plus its
// 100·256 learned queries.
func TestListDETR(t *testing.T) {
	code, out, _ := vitbench(t, "list", "-json")
	if code != 0 {
		t.Fatal(code)
	}
	var l struct {
		Cases []caseListing `json:"cases"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"detr_r50": 41524768, "detr_r101": 60464672, "detr_dc5_r50": 41524768,
		"detr_r50_small_b2": 41524768, "detr_transformer": 17363456 + 25600}
	for _, c := range l.Cases {
		if n, ok := want[c.Name]; ok {
			if c.Params != n {
				t.Errorf("%s: list shows %d parameters, want %d", c.Name, c.Params, n)
			}
			delete(want, c.Name)
		}
	}
	for name := range want {
		t.Errorf("%s is not listed", name)
	}
}
