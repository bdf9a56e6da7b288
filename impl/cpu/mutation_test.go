//go:build mutation

package cpu

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"vitbench/bench/accuracy"
	"vitbench/bench/cases"
	"vitbench/bench/fixture"
	"vitbench/bench/npy"
	"vitbench/bench/runner"
	"vitbench/internal/mutation"
)

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
	// multiple is the largest error/noise multiple (accuracy.Multiple) of
	// a catching fixture's reported output: how far past the measured bound
	// the mistake lands (0 when no catching fixture has a noise record).
	multiple float64
}

// TestMutations is the mutation suite (run it with -tags mutation): every
// committed fixture but the large networks passes unmutated and records which mutations' decision
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
	root := "../../fixtures"
	if dir := os.Getenv("VITBENCH_MUTATION_FIXTURES"); dir != "" {
		root = dir // another tree, e.g. a fresh export with another seed
	}
	fixtures := reachingFixtures(t, b, root, opt)
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
		if c, ok := cases.Lookup(fx.Desc.Name); ok && c.Large {
			continue // minutes of the same nodes the smaller networks run
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
			r.multiple = math.Max(r.multiple, reportedMultiple(t, f.dir, row.Output, row.NMSE, row.MaxAbs))
		}
	}
	sort.Strings(r.ops)
	r.reachedByNone = len(r.run) == 0
	return r
}

// reportedMultiple is accuracy.Multiple of a check row's reported output
// (0 when the fixture has no noise record for it).
func reportedMultiple(t *testing.T, dir, output string, nmse, maxAbs float64) float64 {
	fx, err := fixture.Load(dir, npy.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := fx.Desc.ReferenceError[output]
	if !ok {
		return 0
	}
	ref, err := fx.Array(fixture.Outputs, output)
	if err != nil {
		t.Fatal(err)
	}
	var refMax float64
	for _, v := range ref {
		if a := math.Abs(float64(v)); a > refMax && !math.IsInf(a, 0) {
			refMax = a
		}
	}
	return accuracy.Multiple(accuracy.Metrics{NMSE: nmse, MaxAbs: maxAbs}, accuracy.Noise{NMSE: n.NMSE, MaxAbs: n.MaxAbs}, refMax)
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
	fmt.Fprintf(&sb, "error/noise: the largest multiple of its reference's own float32 error that a catching fixture's output reaches (bound: %d)\n\n", accuracy.NoiseMultiple)
	sb.WriteString("| mutation | node | fixture op kinds reaching it | caught by | ran | error/noise |\n|:--|:--|:--|:--|--:|--:|\n")
	for _, r := range results {
		by := strings.Join(r.caught, ", ")
		if by == "" {
			by = "**NOT CAUGHT**"
		}
		mult := "—"
		if r.multiple > 0 {
			mult = fmt.Sprintf("%.3g", r.multiple)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %d | %s |\n", r.info.Name, r.info.Site, strings.Join(r.ops, ", "), by, len(r.run), mult)
	}
	return sb.String()
}
