// Package cases is vitbench's built-in case list: named, data-driven
// descriptions (op kind, hyper-parameters, batch, dtype, tolerance class)
// that `vitbench list` shows and `vitbench bench` times without fixtures.
// The committed fixtures under fixtures/ carry the same descriptions, and a
// test keeps the two in agreement.
package cases

import (
	"encoding/json"
	"fmt"
	"regexp"

	"vitbench/bench"
	_ "vitbench/bench/ops" // registers the op kinds the cases use
)

// Case is one named configuration of an op kind or a network.
type Case struct {
	Name      string          `json:"name"`
	Kind      string          `json:"kind"` // "component" or "network"
	Op        string          `json:"op"`
	Params    json.RawMessage `json:"params"`
	Batch     int             `json:"batch"`
	DType     bench.DType     `json:"dtype"`
	Tolerance string          `json:"tolerance"`
}

// Spec resolves the case's op kind and hyper-parameters at the given batch
// (0 = the case's own batch).
func (c Case) Spec(batch int) (bench.Spec, error) {
	k, err := bench.LookupOpKind(c.Op)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	if batch <= 0 {
		batch = c.Batch
	}
	s, err := k.Parse(c.Params, batch)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	return s, nil
}

func component(name, op, tol string, batch int, params string) Case {
	return Case{Name: name, Kind: "component", Op: op, Params: json.RawMessage(params),
		Batch: batch, DType: bench.Float32, Tolerance: tol}
}

// builtin is the case list, one line per case. Names are component/config.
var builtin = []Case{
	component("patch_embed/vit_b16", "patch_embed", "gemm", 1, `{"in_chans": 3, "embed_dim": 768, "patch_size": 16, "img_size": 224}`),
	component("patch_embed/vit_s16", "patch_embed", "gemm", 1, `{"in_chans": 3, "embed_dim": 384, "patch_size": 16, "img_size": 224}`),
	component("patch_embed/vit_b16_384", "patch_embed", "gemm", 1, `{"in_chans": 3, "embed_dim": 768, "patch_size": 16, "img_size": 384}`),
	component("patch_embed/vit_ti16_b2", "patch_embed", "gemm", 2, `{"in_chans": 3, "embed_dim": 192, "patch_size": 16, "img_size": 224}`),
	component("patch_embed/odd_c5_e37_p7", "patch_embed", "gemm", 1, `{"in_chans": 5, "embed_dim": 37, "patch_size": 7, "img_size": [31, 45]}`),
	component("patch_embed/rect_p8x4", "patch_embed", "gemm", 1, `{"in_chans": 3, "embed_dim": 20, "patch_size": [8, 4], "img_size": [40, 36], "bias": false}`),
	component("soft_split/t2t_ss0", "soft_split", "exact", 1, `{"in_chans": 3, "img_size": 224, "kernel_size": 7, "stride": 4, "padding": 2}`),
	component("soft_split/t2t_ss1", "soft_split", "exact", 1, `{"in_chans": 64, "img_size": 56, "kernel_size": 3, "stride": 2, "padding": 1}`),
	component("soft_split/t2t_ss2", "soft_split", "exact", 1, `{"in_chans": 64, "img_size": 28, "kernel_size": 3, "stride": 2, "padding": 1}`),
	component("soft_split/t2t_ss1_b2", "soft_split", "exact", 2, `{"in_chans": 64, "img_size": 56, "kernel_size": 3, "stride": 2, "padding": 1}`),
	component("soft_split/odd_c5_k3_s2_p1", "soft_split", "exact", 1, `{"in_chans": 5, "img_size": [29, 23], "kernel_size": 3, "stride": 2, "padding": 1}`),
	component("soft_split/dil2_k3", "soft_split", "exact", 1, `{"in_chans": 3, "img_size": [17, 19], "kernel_size": 3, "stride": 1, "padding": 2, "dilation": 2}`),
	component("soft_split/rect_k5x3_s3x2", "soft_split", "exact", 1, `{"in_chans": 4, "img_size": [21, 16], "kernel_size": [5, 3], "stride": [3, 2], "padding": [2, 1]}`),
}

// All returns the built-in cases in their listed order.
func All() []Case { return append([]Case(nil), builtin...) }

// Lookup returns the built-in case called name.
func Lookup(name string) (Case, bool) {
	for _, c := range builtin {
		if c.Name == name {
			return c, true
		}
	}
	return Case{}, false
}

// Match returns the built-in cases whose names match re (nil matches all).
func Match(re *regexp.Regexp) []Case {
	var out []Case
	for _, c := range builtin {
		if re == nil || re.MatchString(c.Name) {
			out = append(out, c)
		}
	}
	return out
}
