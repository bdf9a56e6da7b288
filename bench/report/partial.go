package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"vitbench/bench/results"
)

// writePartial says, right under the title, that the report is built from a run stopped
// before it finished: Input.Partial, and the "partial" meta line of every result file that
// has one (results.PartialKey), each with its reason. Nothing when the run was complete.
func writePartial(w io.Writer, in Input) {
	var why []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(why, s) {
			why = append(why, s)
		}
	}
	add(in.Partial)
	for _, f := range in.Bench {
		add(f.Meta.Extra[results.PartialKey])
	}
	for _, f := range in.Check {
		add(f.Meta.Extra[results.PartialKey])
	}
	if len(why) == 0 {
		return
	}
	fmt.Fprintf(w, "> **Partial results: the run was stopped before it finished, so cases are missing below.** %s\n\n",
		Inline(strings.Join(why, "; ")))
}
