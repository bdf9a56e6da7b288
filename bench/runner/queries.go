package runner

import (
	"maps"
	"math"
	"slices"
	"strings"

	"vitbench/bench"
	"vitbench/bench/accuracy"
	"vitbench/bench/fixture"
)

// Two-stage query rows (fixtures/FORMAT.md, "How two-stage query rows are
// judged"). A two-stage Deformable DETR takes its queries from the
// encoder: the proposals with the largest class-0 logits, in descending
// order. The decoder treats its queries alike (self-attention has no
// query index), so row q of every per-query output belongs to the
// proposal ranked q-th. Two proposals whose scores differ by less than
// the computation's error can be ranked either way by two correct
// implementations: their rows trade places, and at the top-k's cut-off a
// proposal just outside the reference's selection can take the last
// place.

// proposalLogits is the two-stage output whose column 0 ranked the queries.
const proposalLogits = "proposal_logits"

// perQueryOutputs are the outputs of op with one row per query, [N, Q, …]:
// those a two-stage case's query order permutes.
func perQueryOutputs(op string, outputs []bench.ArraySpec) []bench.ArraySpec {
	var names func(string) bool
	switch op {
	case "deformable_detr":
		names = func(n string) bool {
			return n == "pred_logits" || n == "pred_boxes" || n == proposalLogits || n == "stages.hs"
		}
	case "ddetr_transformer":
		names = func(n string) bool {
			return n == "hs" || n == "reference_points" || n == "last_reference" || n == proposalLogits ||
				strings.HasPrefix(n, "stages.dec")
		}
	default:
		return nil
	}
	var out []bench.ArraySpec
	for _, a := range outputs {
		if names(a.Name) {
			out = append(out, a)
		}
	}
	return out
}

// QueryOrder is one image's alignment of a backend's query rows to the
// reference's: Source[r] is the backend's row that holds the proposal of
// the reference's row r, or −1 where row r is forgiven (the backend did
// not select that proposal, and both it and the one the backend selected
// instead score near the cut-off).
type QueryOrder struct{ Source []int }

// AlignQueryRows matches the Q query rows of one image. refScore and
// gotScore are the two sides' ranking scores in query order (descending);
// same(g, r) reports whether the backend's row g equals the reference's
// row r within tolerance (the same proposal, decoded alike); near(a, b)
// whether two scores are closer than two correct implementations can
// tell apart.
//
// Each reference row r is matched to the backend row nearest to r that is
// the same (r itself first). The match is accepted only when it is an
// order two correct implementations may produce:
//   - two matched proposals in the other order have near reference scores,
//     not exactly equal ones (exactly equal scores are ordered lower row
//     first by every implementation);
//   - a proposal only one side selected scores near the cut-off (the
//     reference's last score), on that side's computation: it was near
//     enough to the last place to be ranked either side of it;
//   - proposals scoring exactly the cut-off are left out or taken in only
//     in exchange for proposals of other scores: among themselves they
//     are ordered lower row first.
//
// Otherwise the identity comes back, for the ordinary comparison to judge.
func AlignQueryRows(refScore, gotScore []float32, same func(g, r int) bool, near func(a, b float32) bool) QueryOrder {
	q := len(refScore)
	identity := make([]int, q)
	for i := range identity {
		identity[i] = i
	}
	src := make([]int, q)
	used := make([]bool, q)
	for r := 0; r < q; r++ {
		src[r] = -1
		for d := 0; d < q && src[r] < 0; d++ {
			for _, g := range []int{r - d, r + d} {
				if g >= 0 && g < q && !used[g] && same(g, r) {
					src[r], used[g] = g, true
					break
				}
			}
		}
	}
	if slices.Equal(src, identity) {
		return QueryOrder{Source: src}
	}
	cut := refScore[q-1]
	for r1 := 0; r1 < q; r1++ {
		if src[r1] < 0 {
			if !near(refScore[r1], cut) {
				return QueryOrder{Source: identity}
			}
			continue
		}
		for r2 := r1 + 1; r2 < q; r2++ {
			if src[r2] >= 0 && src[r2] < src[r1] && (refScore[r1] == refScore[r2] || !near(refScore[r1], refScore[r2])) {
				return QueryOrder{Source: identity}
			}
		}
	}
	// Proposals scoring exactly the cut-off tie with the reference's last one and are
	// ordered lower row first: one side can select fewer of them only for a proposal of
	// another score it selected instead, never for another of them.
	var refOnly, refOnlyAtCut, gotOnly, gotOnlyAtCut int
	for r := 0; r < q; r++ {
		if src[r] < 0 {
			refOnly++
			if refScore[r] == cut {
				refOnlyAtCut++
			}
		}
	}
	for g := 0; g < q; g++ {
		if used[g] {
			continue
		}
		if !near(gotScore[g], cut) {
			return QueryOrder{Source: identity}
		}
		gotOnly++
		if gotScore[g] == cut {
			gotOnlyAtCut++
		}
	}
	if refOnlyAtCut > gotOnly-gotOnlyAtCut || gotOnlyAtCut > refOnly-refOnlyAtCut {
		return QueryOrder{Source: identity}
	}
	return QueryOrder{Source: src}
}

// alignQueries returns got with a two-stage case's query rows put in the
// reference's order (AlignQueryRows, per image, with the ranking scores of
// column 0 of proposal_logits and the per-query outputs' tolerances), and
// how many rows were forgiven; a forgiven row takes the reference's values
// where the fixture stores them. Rows are matched on the per-query
// outputs stored whole; the order then applies to the sampled ones too,
// before they are cut. Other cases come back unchanged.
func alignQueries(op string, outputs []bench.ArraySpec, got map[string][]float32, ref func(name string) ([]float32, error),
	sampling map[string]fixture.Sampling, tolFor func(name string, ref []float32) accuracy.Tolerance) (map[string][]float32, int, error) {
	rows := perQueryOutputs(op, outputs)
	var pl bench.ArraySpec
	for _, a := range rows {
		if a.Name == proposalLogits {
			pl = a
		}
	}
	if len(pl.Shape) != 3 || pl.Shape[2] < 1 {
		return got, 0, nil
	}
	if _, ok := sampling[proposalLogits]; ok {
		return got, 0, nil
	}
	n, q := pl.Shape[0], pl.Shape[1]
	type rowed struct {
		spec      bench.ArraySpec
		width     int
		got, want []float32
		tol       accuracy.Tolerance
		smp       *fixture.Sampling
	}
	var all []rowed
	for _, a := range rows {
		if len(a.Shape) < 2 || a.Shape[0] != n || a.Shape[1] != q || int64(len(got[a.Name])) != a.Shape.Elems() {
			return got, 0, nil
		}
		want, err := ref(a.Name)
		if err != nil {
			return nil, 0, err
		}
		r := rowed{spec: a, width: int(a.Shape.Elems()) / (n * q), got: got[a.Name], want: want, tol: tolFor(a.Name, want)}
		if s, ok := sampling[a.Name]; ok {
			r.smp = &s
		} else if len(want) != len(r.got) {
			return got, 0, nil
		}
		all = append(all, r)
	}
	within := func(g, r float32, t accuracy.Tolerance) bool {
		gi, ri := math.IsInf(float64(g), 0), math.IsInf(float64(r), 0)
		if gi || ri {
			return g == r
		}
		return math.Abs(float64(g)-float64(r)) <= t.ATol+t.RTol*math.Abs(float64(r))
	}
	plTol := tolFor(proposalLogits, all[0].want)
	for _, a := range all {
		if a.spec.Name == proposalLogits {
			plTol = a.tol
		}
	}
	near := func(a, b float32) bool {
		return math.Abs(float64(a)-float64(b)) <= 2*(plTol.ATol+plTol.RTol*math.Abs(float64(b)))
	}
	out := maps.Clone(got)
	for _, a := range all {
		out[a.spec.Name] = append([]float32(nil), a.got...)
	}
	forgiven := 0
	c := pl.Shape[2]
	refPL, gotPL := got[proposalLogits], got[proposalLogits]
	for _, a := range all {
		if a.spec.Name == proposalLogits {
			refPL = a.want
		}
	}
	refScore, gotScore := make([]float32, q), make([]float32, q)
	for img := 0; img < n; img++ {
		for i := 0; i < q; i++ {
			refScore[i], gotScore[i] = refPL[(img*q+i)*c], gotPL[(img*q+i)*c]
		}
		same := func(g, r int) bool {
			for _, a := range all {
				if a.smp != nil {
					continue
				}
				gr, rr := a.got[(img*q+g)*a.width:][:a.width], a.want[(img*q+r)*a.width:][:a.width]
				for j := range gr {
					if !within(gr[j], rr[j], a.tol) {
						return false
					}
				}
			}
			return true
		}
		order := AlignQueryRows(refScore, gotScore, same, near)
		for r, g := range order.Source {
			if g == r {
				continue
			}
			if g < 0 {
				forgiven++
			}
			for _, a := range all {
				dst := out[a.spec.Name][(img*q+r)*a.width:][:a.width]
				switch {
				case g >= 0:
					copy(dst, a.got[(img*q+g)*a.width:][:a.width])
				case a.smp == nil:
					copy(dst, a.want[(img*q+r)*a.width:][:a.width])
				case a.smp.Axis == 1 && r%a.smp.Step == 0:
					// The stored sample keeps every Step-th query: row r is its row r/Step.
					qs := (q + a.smp.Step - 1) / a.smp.Step
					copy(dst, a.want[(img*qs+r/a.smp.Step)*a.width:][:a.width])
				}
			}
		}
	}
	return out, forgiven, nil
}
