package ops

import (
	"encoding/json"
	"fmt"
	"slices"

	"vitbench/bench"
)

// VQGAN's op kinds (taming-transformers; docs/reference-notes.md, VQGAN):
// the components group_norm, vq_resnet_block, vq_attn_block,
// vq_downsample, vq_upsample and vector_quantize, and the networks
// vq_encoder, vq_decoder and vqgan, with the original's state_dict names.

// VQParams is the JSON form of the vq_encoder, vq_decoder and vqgan cases:
// taming's ddconfig (double_z false, dropout 0), the quantizer's embed_dim
// and n_embed (vqgan only), and the size the case runs at: img_size, the
// image (vq_encoder, vqgan; default resolution), or z_size, the latent
// (vq_decoder; default resolution / 2^(levels − 1)).
type VQParams struct {
	Resolution      int   `json:"resolution"`
	InChannels      int   `json:"in_channels"`
	OutCh           int   `json:"out_ch"`
	Ch              int   `json:"ch"`
	ChMult          []int `json:"ch_mult"`
	NumResBlocks    int   `json:"num_res_blocks"`
	AttnResolutions []int `json:"attn_resolutions"`
	ZChannels       int   `json:"z_channels"`
	EmbedDim        int   `json:"embed_dim,omitempty"`
	NEmbed          int   `json:"n_embed,omitempty"`
	ImgSize         *Pair `json:"img_size,omitempty"`
	ZSize           *Pair `json:"z_size,omitempty"`
}

func parseVQConfig(op string, p VQParams, batch int) (vqConfig, error) {
	if err := positive(op, "batch", batch, "resolution", p.Resolution, "in_channels", p.InChannels, "out_ch", p.OutCh,
		"ch", p.Ch, "num_res_blocks", p.NumResBlocks, "z_channels", p.ZChannels); err != nil {
		return vqConfig{}, err
	}
	if err := checkDims(op, "batch", batch, "resolution", p.Resolution, "in_channels", p.InChannels, "out_ch", p.OutCh,
		"z_channels", p.ZChannels); err != nil {
		return vqConfig{}, err
	}
	if len(p.ChMult) < 1 || len(p.ChMult) > 8 || p.NumResBlocks > 64 {
		return vqConfig{}, fmt.Errorf("%s params: ch_mult must list 1 to 8 levels and num_res_blocks be at most 64, got %v and %d",
			op, p.ChMult, p.NumResBlocks)
	}
	c := vqConfig{resolution: p.Resolution, inCh: p.InChannels, outCh: p.OutCh, ch: p.Ch, nrb: p.NumResBlocks, zCh: p.ZChannels,
		chMult: slices.Clone(p.ChMult), attn: map[int]bool{}}
	for i, m := range p.ChMult {
		if m < 1 || m > 64 || (p.Ch*m)%vqGroups != 0 || p.Ch*m > maxDim {
			return vqConfig{}, fmt.Errorf("%s params: ch_mult[%d] = %d: every level's width ch·mult must be a multiple of GroupNorm's %d groups (ch %d)",
				op, i, m, vqGroups, p.Ch)
		}
	}
	for _, r := range p.AttnResolutions {
		if r < 1 {
			return vqConfig{}, fmt.Errorf("%s params: attn_resolutions must be positive, got %v", op, p.AttnResolutions)
		}
		c.attn[r] = true
	}
	return c, nil
}

// vqSizeOf resolves an optional size, checking that it is positive.
func vqSizeOf(op, name string, p *Pair, def int) (int, int, error) {
	if p == nil {
		return def, def, nil
	}
	if err := positive(op, name, *p); err != nil {
		return 0, 0, err
	}
	if err := checkDims(op, name, *p); err != nil {
		return 0, 0, err
	}
	return p[0], p[1], nil
}

// vqNetSpec is a vq_encoder, vq_decoder or vqgan case.
type vqNetSpec struct {
	op           string
	batch        int
	cfg          vqConfig
	h, w         int // the input image (or latent, vq_decoder)
	zh, zw       int // the latent
	embed, codes int
	weights      []bench.ArraySpec
	macs         int64
	outH, outW   int
}

type vqNetKind struct{ name, summary string }

func (k vqNetKind) Name() string    { return k.name }
func (k vqNetKind) Summary() string { return k.summary }

func (k vqNetKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p VQParams
	if err := decodeStrict(k.name, raw, &p); err != nil {
		return nil, err
	}
	c, err := parseVQConfig(k.name, p, batch)
	if err != nil {
		return nil, err
	}
	s := &vqNetSpec{op: k.name, batch: batch, cfg: c}
	if k.name == "vq_decoder" {
		if p.ImgSize != nil || p.EmbedDim != 0 || p.NEmbed != 0 {
			return nil, fmt.Errorf("vq_decoder params: img_size, embed_dim and n_embed belong to vq_encoder and vqgan (the decoder takes z_size)")
		}
		if s.zh, s.zw, err = vqSizeOf(k.name, "z_size", p.ZSize, p.Resolution>>(len(c.chMult)-1)); err != nil {
			return nil, err
		}
		if s.zh < 1 {
			return nil, fmt.Errorf("vq_decoder params: resolution %d has no latent over %d levels", p.Resolution, len(c.chMult))
		}
		s.h, s.w = s.zh, s.zw
	} else {
		if p.ZSize != nil {
			return nil, fmt.Errorf("%s params: z_size belongs to vq_decoder (this op kind takes img_size)", k.name)
		}
		if s.h, s.w, err = vqSizeOf(k.name, "img_size", p.ImgSize, p.Resolution); err != nil {
			return nil, err
		}
		// Every Downsample needs at least 2 rows and columns (after its padding, one 3×3 window).
		hh, ww := s.h, s.w
		for i := 0; i+1 < len(c.chMult); i++ {
			if hh < 2 || ww < 2 {
				return nil, fmt.Errorf("%s params: img_size [%d, %d] is too small for %d downsamplings", k.name, s.h, s.w, len(c.chMult)-1)
			}
			hh, ww = downSize(hh), downSize(ww)
		}
		s.zh, s.zw = hh, ww
	}
	if k.name == "vqgan" {
		if err := positive("vqgan", "embed_dim", p.EmbedDim, "n_embed", p.NEmbed); err != nil {
			return nil, err
		}
		if err := checkDims("vqgan", "embed_dim", p.EmbedDim, "n_embed", p.NEmbed); err != nil {
			return nil, err
		}
		if p.NEmbed > 1<<24 {
			return nil, fmt.Errorf("vqgan params: n_embed %d: indices above 2^24 are not exact in float32", p.NEmbed)
		}
		s.embed, s.codes = p.EmbedDim, p.NEmbed
	} else if p.EmbedDim != 0 || p.NEmbed != 0 {
		return nil, fmt.Errorf("%s params: embed_dim and n_embed belong to vqgan", k.name)
	}
	v := &vqNet{batch: batch, record: true}
	s.steps(v, &bench.Graph{})
	s.weights, s.macs = v.weights, v.macs
	return s, nil
}

func (s *vqNetSpec) Op() string { return s.op }

func (s *vqNetSpec) Inputs() []bench.ArraySpec {
	if s.op == "vq_decoder" {
		return []bench.ArraySpec{{Name: "z", Shape: bench.Shape{s.batch, s.cfg.zCh, s.zh, s.zw}}}
	}
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{s.batch, s.cfg.inCh, s.h, s.w}}}
}

func (s *vqNetSpec) Weights() []bench.ArraySpec { return s.weights }

// Outputs: vq_encoder out [B, z_channels, h', w'], vq_decoder out
// [B, out_ch, H, W]; vqgan dec [B, out_ch, H, W] (the reconstruction) and
// indices [B, h', w'] (the codes, as float32).
func (s *vqNetSpec) Outputs() []bench.ArraySpec {
	up := 1 << (len(s.cfg.chMult) - 1)
	img := bench.Shape{s.batch, s.cfg.outCh, s.zh * up, s.zw * up}
	switch s.op {
	case "vq_encoder":
		return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{s.batch, s.cfg.zCh, s.zh, s.zw}}}
	case "vq_decoder":
		return []bench.ArraySpec{{Name: "out", Shape: img}}
	}
	return []bench.ArraySpec{{Name: "dec", Shape: img}, {Name: "indices", Shape: bench.Shape{s.batch, s.zh, s.zw}}}
}

func (s *vqNetSpec) MACs() int64   { return s.macs }
func (s *vqNetSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *vqNetSpec) Params() int64 { return bench.BytesOf(s.weights) / 4 }

func (s *vqNetSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.steps(&vqNet{batch: s.batch}, g)
	return g
}

// steps appends the whole case to g.
func (s *vqNetSpec) steps(v *vqNet, g *bench.Graph) {
	switch s.op {
	case "vq_encoder":
		v.encoder(g, s.cfg, "x", "out", s.h, s.w)
	case "vq_decoder":
		v.decoder(g, s.cfg, "z", "out", s.zh, s.zw)
	default:
		z := v.fmap(g, "z", s.cfg.zCh, s.zh, s.zw)
		dz := v.fmap(g, "dz", s.cfg.zCh, s.zh, s.zw)
		v.encoder(g, s.cfg, "x", z, s.h, s.w)
		v.quantize(g, s.cfg, s.embed, s.codes, z, dz, "indices", s.zh, s.zw)
		v.decoder(g, s.cfg, dz, "dec", s.zh, s.zw)
	}
}

// VQBlockParams is the JSON form of the VQGAN component cases on one
// [B, C, H, W] map: group_norm (chans, img_size, groups, eps, swish),
// vq_resnet_block (in_chans, out_chans), vq_attn_block, vq_downsample and
// vq_upsample (chans), and vector_quantize (chans = the codebook's width,
// codes = n_embed).
type VQBlockParams struct {
	Chans    int      `json:"chans,omitempty"`
	InChans  int      `json:"in_chans,omitempty"`
	OutChans int      `json:"out_chans,omitempty"`
	ImgSize  Pair     `json:"img_size"`
	Groups   int      `json:"groups,omitempty"`
	Eps      *float64 `json:"eps,omitempty"`
	Swish    *bool    `json:"swish,omitempty"`
	Codes    int      `json:"codes,omitempty"`
}

// vqBlockSpec is a VQGAN component case: one sub-graph of vqNet (or one
// node) between the input x (z for vector_quantize) and its outputs.
type vqBlockSpec struct {
	op               string
	batch, h, w      int
	cin, cout, codes int
	gn               GroupNorm
	weights          []bench.ArraySpec
	macs             int64
}

type vqBlockKind struct{ name, summary string }

func (k vqBlockKind) Name() string    { return k.name }
func (k vqBlockKind) Summary() string { return k.summary }

func (k vqBlockKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p VQBlockParams
	if err := decodeStrict(k.name, raw, &p); err != nil {
		return nil, err
	}
	if err := positive(k.name, "batch", batch, "img_size", p.ImgSize); err != nil {
		return nil, err
	}
	if err := checkDims(k.name, "batch", batch, "img_size", p.ImgSize, "chans", p.Chans, "in_chans", p.InChans,
		"out_chans", p.OutChans, "codes", p.Codes); err != nil {
		return nil, err
	}
	s := &vqBlockSpec{op: k.name, batch: batch, h: p.ImgSize[0], w: p.ImgSize[1], cin: p.Chans, cout: p.Chans}
	only := func(allowed ...string) error {
		set := map[string]bool{"chans": p.Chans != 0, "in_chans": p.InChans != 0, "out_chans": p.OutChans != 0,
			"groups": p.Groups != 0, "eps": p.Eps != nil, "swish": p.Swish != nil, "codes": p.Codes != 0}
		for _, a := range allowed {
			delete(set, a)
		}
		for name, given := range set {
			if given {
				return fmt.Errorf("%s params: %s is not a parameter of this op kind (it takes %v and img_size)", k.name, name, allowed)
			}
		}
		return nil
	}
	var err error
	switch k.name {
	case "vq_resnet_block":
		err = only("in_chans", "out_chans")
		s.cin, s.cout = p.InChans, p.OutChans
	case "group_norm":
		err = only("chans", "groups", "eps", "swish")
		s.gn = GroupNorm{Batch: batch, Chans: p.Chans, Groups: p.Groups, Height: s.h, Width: s.w, Eps: vqEps, Swish: orBool(p.Swish, false)}
		if p.Eps != nil {
			if !(*p.Eps > 0) {
				return nil, fmt.Errorf("group_norm params: eps must be positive")
			}
			s.gn.Eps = *p.Eps
		}
		if err == nil && (p.Groups < 1 || p.Chans%p.Groups != 0) {
			return nil, fmt.Errorf("group_norm params: chans %d must be a positive multiple of groups %d", p.Chans, p.Groups)
		}
	case "vector_quantize":
		err = only("chans", "codes")
		s.codes = p.Codes
		if err == nil && (p.Codes < 1 || p.Codes > 1<<24) {
			return nil, fmt.Errorf("vector_quantize params: codes must be in 1..2^24 (indices exact in float32), got %d", p.Codes)
		}
	default:
		err = only("chans")
	}
	if err != nil {
		return nil, err
	}
	if err := positive(k.name, "chans", s.cin, "out_chans", s.cout); err != nil {
		return nil, err
	}
	if k.name != "group_norm" && k.name != "vector_quantize" && (s.cin%vqGroups != 0 || s.cout%vqGroups != 0) {
		return nil, fmt.Errorf("%s params: channels %d and %d must be multiples of GroupNorm's %d groups", k.name, s.cin, s.cout, vqGroups)
	}
	if k.name == "vq_downsample" && (s.h < 2 || s.w < 2) {
		return nil, fmt.Errorf("vq_downsample params: img_size [%d, %d] is smaller than its 3×3 window after padding", s.h, s.w)
	}
	v := &vqNet{batch: batch, record: true}
	s.steps(v, &bench.Graph{})
	s.weights, s.macs = v.weights, v.macs
	return s, nil
}

func (s *vqBlockSpec) Op() string { return s.op }

func (s *vqBlockSpec) Inputs() []bench.ArraySpec {
	name := "x"
	if s.op == "vector_quantize" {
		name = "z"
	}
	return []bench.ArraySpec{{Name: name, Shape: bench.Shape{s.batch, s.cin, s.h, s.w}}}
}

func (s *vqBlockSpec) Weights() []bench.ArraySpec { return s.weights }

// Outputs: out [B, C', H', W']; vector_quantize quant [B, C, H, W] and
// indices [B, H, W].
func (s *vqBlockSpec) Outputs() []bench.ArraySpec {
	b := s.batch
	switch s.op {
	case "vector_quantize":
		return []bench.ArraySpec{{Name: "quant", Shape: bench.Shape{b, s.cin, s.h, s.w}}, {Name: "indices", Shape: bench.Shape{b, s.h, s.w}}}
	case "vq_downsample":
		return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{b, s.cout, downSize(s.h), downSize(s.w)}}}
	case "vq_upsample":
		return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{b, s.cout, 2 * s.h, 2 * s.w}}}
	}
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{b, s.cout, s.h, s.w}}}
}

func (s *vqBlockSpec) MACs() int64   { return s.macs }
func (s *vqBlockSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *vqBlockSpec) Params() int64 { return bench.BytesOf(s.weights) / 4 }

func (s *vqBlockSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.steps(&vqNet{batch: s.batch}, g)
	return g
}

func (s *vqBlockSpec) steps(v *vqNet, g *bench.Graph) {
	switch s.op {
	case "group_norm":
		v.add(bench.ArraySpec{Name: "weight", Shape: bench.Shape{s.cin}}, bench.ArraySpec{Name: "bias", Shape: bench.Shape{s.cin}})
		g.Steps = append(g.Steps, bench.Step{Node: s.gn, In: []string{"x", "weight", "bias"}, Out: []string{"out"}})
	case "vq_resnet_block":
		v.resnetBlock(g, "", "x", "out", s.cin, s.cout, s.h, s.w)
	case "vq_attn_block":
		v.attnBlock(g, "", "x", "out", s.cin, s.h, s.w)
	case "vq_downsample":
		v.downsample(g, "", "x", "out", s.cin, s.h, s.w)
	case "vq_upsample":
		v.upsample(g, "", "x", "out", s.cin, s.h, s.w)
	case "vector_quantize":
		vq := VectorQuantize{Batch: s.batch, Chans: s.cin, Height: s.h, Width: s.w, Codes: s.codes}
		v.add(bench.ArraySpec{Name: "embedding.weight", Shape: bench.Shape{s.codes, s.cin}})
		if v.record {
			v.macs += vq.MACs()
		}
		g.Steps = append(g.Steps, bench.Step{Node: vq, In: []string{"z", "embedding.weight"}, Out: []string{"quant", "indices"}})
	}
}

func init() {
	for _, k := range []vqBlockKind{
		{"group_norm", "nn.GroupNorm(groups, C, eps) on [B, C, H, W] [+ swish x·sigmoid(x)]: VQGAN's Normalize (32 groups, eps 1e-6)"},
		{"vq_resnet_block", "VQGAN ResnetBlock: pre-activation GroupNorm-swish-conv3×3 twice, 1×1 nin_shortcut when channels change"},
		{"vq_attn_block", "VQGAN AttnBlock: GroupNorm, 1×1 q/k/v, one head over all C channels (scale C^-0.5), 1×1 proj_out, residual"},
		{"vq_downsample", "VQGAN Downsample: zero pad right and bottom by 1, 3×3 conv stride 2 padding 0"},
		{"vq_upsample", "VQGAN Upsample: nearest ×2, 3×3 conv"},
		{"vector_quantize", "VectorQuantizer2: argmin of ‖z‖²+‖e‖²−2z·e (first on ties), straight-through z+(e−z), indices"},
	} {
		bench.RegisterOpKind(k)
	}
	for _, k := range []vqNetKind{
		{"vq_encoder", "taming Encoder: conv_in, ResnetBlocks/AttnBlocks per level, asymmetric-pad Downsample, mid, GroupNorm-swish, conv_out"},
		{"vq_decoder", "taming Decoder: conv_in, mid, ResnetBlocks/AttnBlocks per level, nearest Upsample, GroupNorm-swish, conv_out"},
		{"vqgan", "VQGAN VQModel: encoder, quant_conv, VectorQuantizer2 (codebook indices), post_quant_conv, decoder"},
	} {
		bench.RegisterOpKind(k)
	}
}
