//go:build mutation

package cpu

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"vitbench/bench/fixture"
	"vitbench/bench/npy"
	"vitbench/bench/runner"
	"vitbench/internal/mutation"
)

// notYetCaught lists the mutations the committed fixtures cannot catch
// yet, with what is missing; they are reported but do not fail the suite.
// The list shrinks to nothing as those pieces land.
var notYetCaught = map[string]string{
	"gelu_tanh":                "its NMSE (1e-8) is inside the gemm and network classes: needs per-case tolerances from measured noise",
	"inverse_sigmoid_eps_1e-3": "no fixture has a reference at 0 or 1: needs a two-stage fixture selecting an invalid (+inf) proposal",
	"topk_ties_last_row_first": "no fixture has tied two-stage scores: needs a fixture with an exact tie in the selection",
}

// mutationFixture is one committed fixture as the mutation suite sees it.
type mutationFixture struct {
	dir, name, op, kind string
	macs                int64
	reached             []string // mutations whose decision points it reaches
}

// mutationResult is what one mutation did to the fixtures that reach it.
type mutationResult struct {
	info          mutation.Info
	ops           []string // op kinds of the fixtures that reach it
	run, caught   []string
	reachedByNone bool
}

// TestMutations is the mutation suite (run it with -tags mutation): every
// committed fixture passes unmutated and records which mutations' decision
// points it reaches; then, one mutation at a time, the fixtures that reach
// it run again — every component fixture, and network fixtures (cheapest
// first, until one fails) only when no component caught it. A mutation
// that no fixture catches fails the test. The table goes to stdout.
func TestMutations(t *testing.T) {
	isa := "avx512"
	if !slices.Contains(SupportedISAs(), isa) {
		isa = SupportedISAs()[0]
	}
	if err := SetISA(isa); err != nil {
		t.Fatal(err)
	}
	defer SetISA(SupportedISAs()[0])
	b := New(2)
	opt := runner.CheckOptions{Limits: npy.Limits{}}
	fixtures := reachingFixtures(t, b, "../../fixtures", opt)
	var results []mutationResult
	for _, m := range mutation.List() {
		results = append(results, runMutation(t, b, m, fixtures, opt))
	}
	if err := mutation.Set(""); err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(os.Stdout, mutationTable(isa, results))
	for _, r := range results {
		if len(r.caught) == 0 {
			if why, ok := notYetCaught[r.info.Name]; ok {
				t.Logf("mutation %s is not caught yet: %s", r.info.Name, why)
				continue
			}
			t.Errorf("mutation %s (%s) is caught by no fixture (ran %v)", r.info.Name, r.info.Doc, r.run)
		}
	}
	if n := len(results); n < 30 {
		t.Errorf("only %d mutations registered; the suite needs at least 30", n)
	}
}

// reachingFixtures checks every fixture under root unmutated (each must
// pass) and records the mutations each one reaches.
func reachingFixtures(t *testing.T, b *Backend, root string, opt runner.CheckOptions) []mutationFixture {
	dirs, err := fixture.Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := mutation.Set(""); err != nil {
		t.Fatal(err)
	}
	var out []mutationFixture
	for _, d := range dirs {
		fx, err := fixture.Load(d, opt.Limits)
		if err != nil {
			t.Fatal(err)
		}
		mutation.Reached()
		row := runner.CheckFixture(b, d, opt)
		if row.Status != runner.OK {
			t.Errorf("%s fails unmutated: %s %s", d, row.Status, row.Reason)
		}
		out = append(out, mutationFixture{dir: d, name: fx.Desc.Name, op: fx.Desc.Op, kind: fx.Desc.Kind,
			macs: fx.Spec.MACs(), reached: mutation.Reached()})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].kind == "network") != (out[j].kind == "network") {
			return out[j].kind == "network"
		}
		return out[i].macs < out[j].macs
	})
	return out
}

// runMutation runs the fixtures that reach mutation m with m active.
func runMutation(t *testing.T, b *Backend, m mutation.Info, fixtures []mutationFixture, opt runner.CheckOptions) mutationResult {
	r := mutationResult{info: m}
	if err := mutation.Set(m.Name); err != nil {
		t.Fatal(err)
	}
	defer mutation.Set("")
	for _, f := range fixtures {
		if !slices.Contains(f.reached, m.Name) {
			continue
		}
		if !slices.Contains(r.ops, f.op) {
			r.ops = append(r.ops, f.op)
		}
		if f.kind == "network" && len(r.caught) > 0 {
			continue
		}
		row := runner.CheckFixture(b, f.dir, opt)
		r.run = append(r.run, f.name)
		switch {
		case row.Error || strings.HasPrefix(row.Reason, "step "):
			t.Errorf("mutation %s on %s did not run: %s", m.Name, f.name, row.Reason)
		case row.Status == runner.FAIL:
			r.caught = append(r.caught, f.name)
		}
	}
	sort.Strings(r.ops)
	r.reachedByNone = len(r.run) == 0
	return r
}

// mutationTable renders the results as a Markdown table.
func mutationTable(isa string, results []mutationResult) string {
	var sb strings.Builder
	caught := 0
	for _, r := range results {
		if len(r.caught) > 0 {
			caught++
		}
	}
	fmt.Fprintf(&sb, "\nmutation suite (ISA path %s): %d of %d mutations caught\n\n", isa, caught, len(results))
	sb.WriteString("| mutation | node | fixture op kinds reaching it | caught by | ran |\n|:--|:--|:--|:--|--:|\n")
	for _, r := range results {
		by := strings.Join(r.caught, ", ")
		if by == "" {
			by = "**NOT CAUGHT**"
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %d |\n", r.info.Name, r.info.Site, strings.Join(r.ops, ", "), by, len(r.run))
	}
	return sb.String()
}
