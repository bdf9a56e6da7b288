package bench_test

import (
	"encoding/json"
	"math"
	"testing"

	"vitbench/bench"
	_ "vitbench/bench/ops"
)

// spec parses an op kind's params at a batch.
func spec(t *testing.T, op, params string, batch int) bench.Spec {
	t.Helper()
	k, err := bench.LookupOpKind(op)
	if err != nil {
		t.Fatal(err)
	}
	s, err := k.Parse(json.RawMessage(params), batch)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSpecNeed: the need is the declared arrays plus the largest node scratch, and
// attention's N² scores are counted; hostile sizes saturate instead of overflowing.
func TestSpecNeed(t *testing.T) {
	g := bench.SpecNeed(spec(t, "gemm", `{"m": 10, "n": 20, "k": 30}`, 2), 2)
	want := bench.Need{Inputs: 2 * 10 * 30 * 4, Weights: (20*30 + 20) * 4, Outputs: 2 * 10 * 20 * 4, Scratch: 2 * 10 * 30 * 4}
	if g != want {
		t.Errorf("gemm need %+v, want %+v", g, want)
	}
	if got, w := g.Total(), 2*want.Inputs+2*want.Weights+3*want.Outputs+want.Scratch; got != w {
		t.Errorf("total %d, want %d", got, w)
	}
	// 2 MiB of tokens whose scores take 16 GiB on one worker, 32 GiB on two (two of the
	// four heads at once).
	a1 := bench.SpecNeed(spec(t, "mhsa", `{"tokens": 65536, "dim": 8, "heads": 4}`, 1), 1)
	a2 := bench.SpecNeed(spec(t, "mhsa", `{"tokens": 65536, "dim": 8, "heads": 4}`, 1), 2)
	if a1.Inputs != 2<<20 || a1.Scratch < 16<<30 || a2.Scratch < 32<<30 {
		t.Errorf("attention need %+v (1 worker), %+v (2 workers): the N² scores are not counted", a1, a2)
	}
	huge := bench.SpecNeed(spec(t, "gemm", `{"m": 16777216, "n": 16777216, "k": 16777216}`, 16777216), 64)
	if huge.Total() != math.MaxInt64 || huge.Outputs != math.MaxInt64 {
		t.Errorf("2^96-element tensors: need %+v, want saturation at MaxInt64", huge)
	}
	if bench.AddSat(math.MaxInt64, 1) != math.MaxInt64 || bench.MulSat(1<<40, 1<<40) != math.MaxInt64 || bench.MulSat(0, math.MaxInt64) != 0 {
		t.Errorf("saturating arithmetic wraps")
	}
}
