package runner

import (
	"maps"
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

// queryRows is one per-query output of a two-stage case: the backend's
// values, the reference's (the stored sample when smp is not nil), its
// width per query row and its element tolerance.
type queryRows struct {
	name      string
	width     int
	got, want []float32
	tol       accuracy.Tolerance
	smp       *fixture.Sampling
}

// row returns query row q of image img of vals, an array of this output
// stored whole (nq queries an image).
func (o queryRows) row(vals []float32, img, nq, q int) []float32 {
	return vals[(img*nq+q)*o.width:][:o.width]
}

// alignQueries returns got with a two-stage case's query rows put in the
// reference's order (AlignQueryRows, per image, with the ranking scores of
// column 0 of proposal_logits and the per-query outputs' tolerances); a
// forgiven row takes the reference's values where the fixture stores
// them. Rows are matched on the per-query outputs stored whole; the order
// then applies to the sampled ones too, before they are cut. Other cases
// come back unchanged.
func alignQueries(op string, outputs []bench.ArraySpec, got map[string][]float32, ref func(name string) ([]float32, error),
	sampling map[string]fixture.Sampling, tolFor func(name string, ref []float32) accuracy.Tolerance) (map[string][]float32, error) {
	specs := perQueryOutputs(op, outputs)
	i := slices.IndexFunc(specs, func(a bench.ArraySpec) bool { return a.Name == proposalLogits })
	if i < 0 || len(specs[i].Shape) != 3 {
		return got, nil
	}
	if _, ok := sampling[proposalLogits]; ok {
		return got, nil
	}
	n, q := specs[i].Shape[0], specs[i].Shape[1]
	var all []queryRows
	var pl queryRows
	for _, a := range specs {
		if len(a.Shape) < 2 || a.Shape[0] != n || a.Shape[1] != q || int64(len(got[a.Name])) != a.Shape.Elems() {
			return got, nil
		}
		want, err := ref(a.Name)
		if err != nil {
			return nil, err
		}
		o := queryRows{name: a.Name, width: int(a.Shape.Elems()) / (n * q), got: got[a.Name], want: want, tol: tolFor(a.Name, want)}
		if s, ok := sampling[a.Name]; ok {
			o.smp = &s
		} else if len(want) != len(o.got) {
			return got, nil
		}
		if a.Name == proposalLogits {
			pl = o
		}
		all = append(all, o)
	}
	out := maps.Clone(got)
	for _, o := range all {
		out[o.name] = slices.Clone(o.got)
	}
	refScore, gotScore := make([]float32, q), make([]float32, q)
	for img := 0; img < n; img++ {
		for r := 0; r < q; r++ {
			refScore[r], gotScore[r] = pl.row(pl.want, img, q, r)[0], pl.row(pl.got, img, q, r)[0]
		}
		same := func(g, r int) bool {
			for _, o := range all {
				if o.smp != nil {
					continue
				}
				rr := o.row(o.want, img, q, r)
				for j, v := range o.row(o.got, img, q, g) {
					if !o.tol.Within(v, rr[j]) {
						return false
					}
				}
			}
			return true
		}
		for r, g := range AlignQueryRows(refScore, gotScore, same, pl.tol.NearTie).Source {
			if g == r {
				continue
			}
			for _, o := range all {
				dst := o.row(out[o.name], img, q, r)
				switch {
				case g >= 0:
					copy(dst, o.row(o.got, img, q, g))
				case o.smp == nil:
					copy(dst, o.row(o.want, img, q, r))
				case o.smp.Axis == 1 && r%o.smp.Step == 0:
					// The stored sample keeps every Step-th query: row r is its row r/Step.
					qs := (q + o.smp.Step - 1) / o.smp.Step
					copy(dst, o.want[(img*qs+r/o.smp.Step)*o.width:][:o.width])
				}
			}
		}
	}
	return out, nil
}
