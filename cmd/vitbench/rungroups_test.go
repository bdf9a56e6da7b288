package main

import (
	"testing"

	"vitbench/bench/cases"
)

// TestCaseGroupsCoverEveryCaseOnceInOrder: run's interleaving groups match exactly their
// own cases (no prefix matches across groups), in list order, n at a time.
func TestCaseGroupsCoverEveryCaseOnceInOrder(t *testing.T) {
	list := cases.Match(nil)
	groups := caseGroups(list, 12)
	if want := (len(list) + 11) / 12; len(groups) != want {
		t.Fatalf("%d groups for %d cases, want %d", len(groups), len(list), want)
	}
	for i, c := range list {
		for g, re := range groups {
			if got, want := re.MatchString(c.Name), g == i/12; got != want {
				t.Errorf("group %d matches %s: %v, want %v", g, c.Name, got, want)
			}
		}
	}
	if len(caseGroups(nil, 12)) != 0 {
		t.Error("groups for no cases")
	}
}
