package ops

import (
	"encoding/json"
	"strings"
	"testing"

	"vitbench/bench"
)

// TestIPTParams checks the parameter counts of docs/reference-notes.md
// (IPT): the option.py default (×4) 115,608,155 with its head / body /
// tail split, the other single-task models and the six-task layout, and
// that each graph is well formed.
func TestIPTParams(t *testing.T) {
	for _, c := range []struct {
		params                   string
		total, head, body, tailN int64
	}{
		{`{}`, 115608155, 411648, 114899328, 297155},
		{`{"scale": [3]}`, 115645083, 411648, 114899328, 334083},
		{`{"scale": [2]}`, 115460443, 411648, 114899328, 149443},
		{`{"scale": [1]}`, 115312731, 411648, 114899328, 1731},
		{`{"scale": [2, 3, 4, 1, 1, 1], "num_queries": 6, "task": 3}`, 118892394, 2469888, 115636608, 785874},
	} {
		s, err := bench.LookupOpKind("ipt")
		if err != nil {
			t.Fatal(err)
		}
		spec, err := s.Parse(json.RawMessage(c.params), 1)
		if err != nil {
			t.Fatalf("%s: %v", c.params, err)
		}
		if got := spec.Params(); got != c.total {
			t.Errorf("%s: %d parameters, the original %d", c.params, got, c.total)
		}
		var head, body, tail int64
		for _, a := range spec.Weights() {
			switch n := a.Shape.Elems(); {
			case strings.HasPrefix(a.Name, "head."):
				head += n
			case strings.HasPrefix(a.Name, "body."):
				body += n
			case strings.HasPrefix(a.Name, "tail."):
				tail += n
			}
		}
		if head != c.head || body != c.body || tail != c.tailN {
			t.Errorf("%s: head %d, body %d, tail %d; the original %d, %d, %d", c.params, head, body, tail, c.head, c.body, c.tailN)
		}
		if err := spec.Graph().Validate(spec); err != nil {
			t.Errorf("%s: %v", c.params, err)
		}
	}
}

// TestIPTRejects: configurations the original cannot build are errors
// naming the parameter.
func TestIPTRejects(t *testing.T) {
	for _, c := range []struct{ op, params, want string }{
		{"ipt", `{"num_heads": 7}`, "num_heads"},
		{"ipt", `{"scale": [5]}`, "scale 5"},
		{"ipt", `{"task": 1}`, "task 1"},
		{"ipt", `{"patch_size": 50}`, "patch_dim"},
		{"ipt_chop", `{"img_size": [40, 60]}`, "smaller"},
		{"ipt_chop", `{"img_size": 60, "patch_size": 18, "n_feats": 4, "num_heads": 4}`, "multiple of 4"},
		{"ipt", `{"bogus": 1}`, "bogus"},
	} {
		k, err := bench.LookupOpKind(c.op)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Parse(json.RawMessage(c.params), 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: error %v, want one naming %q", c.op, c.params, err, c.want)
		}
	}
}

// TestChopSources: the original's 100×130 image at ×2 takes 60 tiles,
// 48 of them distinct; every output pixel has one to four sources, and
// each source tile covers the pixel.
func TestChopSources(t *testing.T) {
	for _, c := range []Chop{{Batch: 1, Chans: 3, Height: 100, Width: 130, Patch: 48, Scale: 2},
		{Batch: 1, Chans: 3, Height: 48, Width: 61, Patch: 48, Scale: 3}, {Batch: 1, Chans: 3, Height: 29, Width: 23, Patch: 12, Scale: 1}} {
		if c.Height == 100 {
			if n := c.Tiles() + c.NH() + c.NW(); n != 60 {
				t.Errorf("100×130: %d tiles with the top and left strips, the original runs 60", n)
			}
		}
		var src []int
		for y := 0; y < c.Height*c.Scale; y++ {
			for x := 0; x < c.Width*c.Scale; x++ {
				src = c.Sources(y, x, src[:0])
				if len(src) == 0 || len(src) > 4 {
					t.Fatalf("%+v: pixel (%d, %d) has %d sources", c, y, x, len(src))
				}
				for _, tl := range src {
					ty, tx := c.SourceOrigin(tl)
					if y < ty || y >= ty+c.Patch*c.Scale || x < tx || x >= tx+c.Patch*c.Scale {
						t.Fatalf("%+v: pixel (%d, %d) from tile %d at (%d, %d), which does not cover it", c, y, x, tl, ty, tx)
					}
				}
			}
		}
	}
}

// TestIPTMACs: one 48×48 tile at ×4 is the 34.73 G of docs/reference-notes.md
// (every attention input through only the in_proj rows it needs), and the
// tiled case counts one forward per distinct tile.
func TestIPTMACs(t *testing.T) {
	k, _ := bench.LookupOpKind("ipt")
	s, err := k.Parse(json.RawMessage(`{}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.MACs(); got != 34730459136 {
		t.Errorf("ipt ×4: %d MACs, want 34,730,459,136 (34.73 G)", got)
	}
	k, _ = bench.LookupOpKind("ipt_chop")
	c, err := k.Parse(json.RawMessage(`{"img_size": [61, 53]}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.MACs(); got != 6*s.MACs() {
		t.Errorf("ipt_chop 61×53: %d MACs, want 6 tiles × %d", got, s.MACs())
	}
}
