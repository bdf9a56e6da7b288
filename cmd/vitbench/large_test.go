package main

import (
	"regexp"
	"strings"
	"testing"

	"vitbench/bench/cases"
)

// notLargeRun is a -run regular expression matching every committed
// fixture but the large networks (builtin.json "large"): the component
// cases (their names hold a "/") and the other networks by name.
func notLargeRun() string {
	var names []string
	for _, c := range cases.All() {
		if c.Kind == "network" && c.Fixture && !c.Large {
			names = append(names, regexp.QuoteMeta(c.Name))
		}
	}
	return "/|^(" + strings.Join(names, "|") + ")$"
}

// TestNotLargeRun: the expression takes components and small networks and
// leaves out every large one.
func TestNotLargeRun(t *testing.T) {
	re := regexp.MustCompile(notLargeRun())
	for _, c := range cases.All() {
		if !c.Fixture {
			continue
		}
		if want := !c.Large; re.MatchString(c.Name) != want {
			t.Errorf("%s (large %v): matched %v", c.Name, c.Large, !want)
		}
	}
}
