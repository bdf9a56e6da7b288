package cases

import (
	"regexp"
	"strings"
	"testing"

	"vitbench/bench"
)

// TestQuickCoversEveryOpKind: the quick set (what `vitbench run` times by default) holds
// exactly one case of every registered op kind, so the main networks (the network op
// kinds) and every component are timed, and an op kind added later cannot be left out of
// it unnoticed.
func TestQuickCoversEveryOpKind(t *testing.T) {
	byOp := map[string][]string{}
	for _, c := range Quick(nil) {
		byOp[c.Op] = append(byOp[c.Op], c.Name)
	}
	for _, op := range bench.OpKindNames() {
		switch n := len(byOp[op]); {
		case n == 0 && len(casesOf(op)) == 0:
			t.Errorf("op kind %s has no built-in case: add one to bench/cases/builtin.json and mark it \"quick\": true", op)
		case n == 0:
			t.Errorf("op kind %s has no quick case: mark one of its built-in cases (%s) \"quick\": true in bench/cases/builtin.json", op, strings.Join(casesOf(op), ", "))
		case n > 1:
			t.Errorf("op kind %s has %d quick cases (%s): mark only one \"quick\": true", op, n, strings.Join(byOp[op], ", "))
		}
		delete(byOp, op)
	}
	for op, names := range byOp {
		t.Errorf("quick cases %v of op kind %s, which is not registered", names, op)
	}
}

// TestQuickHoldsTheMainNetworks: every network op kind (ViT/DeiT, T2T-ViT, VOLO, Deformable
// DETR's transformer and the whole detector, and any added since) is in the quick set as a
// network case, and none of them is a "large" one (tens of GMACs: minutes in PyTorch).
func TestQuickHoldsTheMainNetworks(t *testing.T) {
	nets := map[string]bool{}
	for _, c := range All() {
		if c.Kind == "network" {
			nets[c.Op] = true
		}
	}
	for _, op := range []string{"vit", "t2t_vit", "volo", "ddetr_transformer", "deformable_detr"} {
		if !nets[op] {
			t.Errorf("no network case of op kind %s", op)
		}
	}
	got := map[string]bool{}
	for _, c := range Quick(nil) {
		if c.Large {
			t.Errorf("quick case %s is marked large", c.Name)
		}
		if c.Kind == "network" {
			got[c.Op] = true
		}
	}
	for op := range nets {
		if !got[op] {
			t.Errorf("network op kind %s has no quick network case", op)
		}
	}
	if n := len(Quick(regexp.MustCompile("^vit_s16$"))); n != 1 {
		t.Errorf("Quick(^vit_s16$) = %d cases, want 1 (the filter applies)", n)
	}
}

// casesOf names the built-in cases of op kind op.
func casesOf(op string) []string {
	var out []string
	for _, c := range All() {
		if c.Op == op {
			out = append(out, c.Name)
		}
	}
	return out
}
