package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// CLIPResNetParams is the JSON form of a clip_resnet case, the arguments
// of CLIP's ModifiedResNet (RN50: layers [3, 4, 6, 3], width 64, heads
// 32, output_dim 1024, input_resolution 224).
type CLIPResNetParams struct {
	Layers          []int `json:"layers"`
	OutputDim       int   `json:"output_dim"`
	Heads           int   `json:"heads"`
	InputResolution int   `json:"input_resolution"`
	Width           int   `json:"width"`
}

// clipResNet is CLIP's ModifiedResNet image tower over batch images, with
// BatchNorm (eval, eps 1e-5) folded into every conv, weights under
// "visual.".
type clipResNet struct {
	batch, res, width, heads, out int
	layers                        [4]int
	weights                       []bench.ArraySpec
	macs                          int64
}

// AttnPoolTokens is the start of CLIP's AttentionPool2d: from the
// flattened feature map x [B, N, C] and the positions pos [N+1, C],
//
//	out[b, 0, :] = mean_t x[b, t, :] + pos[0, :]
//	out[b, 1+t, :] = x[b, t, :] + pos[1+t, :]          out [B, N+1, C]
//
// the mean summed in float64 and rounded once.
type AttnPoolTokens struct {
	Batch, Tokens, Chans int
}

// OpName implements bench.Node.
func (AttnPoolTokens) OpName() string { return "attn_pool_tokens" }

type clipResNetKind struct{}

func (clipResNetKind) Name() string { return "clip_resnet" }
func (clipResNetKind) Summary() string {
	return "CLIP ModifiedResNet: 3-conv stem, avg-pool (anti-aliased) bottlenecks, AttentionPool2d with the mean token as query"
}

func (clipResNetKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p CLIPResNetParams
	if err := decodeStrict("clip_resnet", raw, &p); err != nil {
		return nil, err
	}
	if err := positive("clip_resnet", "batch", batch, "output_dim", p.OutputDim, "heads", p.Heads,
		"input_resolution", p.InputResolution, "width", p.Width); err != nil {
		return nil, err
	}
	if err := checkDims("clip_resnet", "batch", batch, "output_dim", p.OutputDim, "input_resolution", p.InputResolution,
		"width", 32*p.Width); err != nil {
		return nil, err
	}
	if len(p.Layers) != 4 {
		return nil, fmt.Errorf("clip_resnet params: layers must list 4 block counts, got %v", p.Layers)
	}
	r := &clipResNet{batch: batch, res: p.InputResolution, width: p.Width, heads: p.Heads, out: p.OutputDim}
	for i, n := range p.Layers {
		if n < 1 || n > 256 {
			return nil, fmt.Errorf("clip_resnet params: layers[%d] = %d must be in 1..256", i, n)
		}
		r.layers[i] = n
	}
	if p.Width%2 != 0 || (32*p.Width)%p.Heads != 0 {
		return nil, fmt.Errorf("clip_resnet params: width %d must be even and 32·width a multiple of heads %d", p.Width, p.Heads)
	}
	if s := r.spatial(); s < 1 || s != p.InputResolution/32 {
		return nil, fmt.Errorf("clip_resnet params: input_resolution %d gives a %d×%d final map, but the attention pool's positions are for %d×%d (input_resolution/32)",
			p.InputResolution, s, s, p.InputResolution/32, p.InputResolution/32)
	}
	r.steps(&bench.Graph{}, true) // fills weights and macs
	return r, nil
}

// spatial is the side of layer4's output: the stride-2 stem conv (⌈R/2⌉),
// then four halvings by 2×2 average pools (floor).
func (r *clipResNet) spatial() int {
	s := (r.res + 1) / 2
	for i := 0; i < 4; i++ {
		s /= 2
	}
	return s
}

func (r *clipResNet) Op() string { return "clip_resnet" }
func (r *clipResNet) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "image", Shape: bench.Shape{r.batch, 3, r.res, r.res}}}
}
func (r *clipResNet) Weights() []bench.ArraySpec { return r.weights }
func (r *clipResNet) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "image_features", Shape: bench.Shape{r.batch, r.out}}}
}
func (r *clipResNet) MACs() int64  { return r.macs }
func (r *clipResNet) Bytes() int64 { return bench.BytesOf(r.Inputs(), r.Weights(), r.Outputs()) }

// Params counts the learned tensors (BatchNorm's running statistics are
// buffers).
func (r *clipResNet) Params() int64 { return bench.BytesOf(r.weights)/4 - bufferParams(r.weights) }

func (r *clipResNet) Graph() *bench.Graph {
	g := &bench.Graph{}
	r.steps(g, false)
	return g
}

// conv appends conv + BatchNorm (+ residual) (+ ReLU) on a [B, cin, h, h]
// map, recording its weights when record.
func (r *clipResNet) conv(g *bench.Graph, record bool, name, bn, in, out string, cin, cout, h, k, stride int, relu bool, res ...string) int {
	u := Unfold{Batch: r.batch, InChans: cin, Height: h, Width: h, KernelH: k, KernelW: k, StrideH: stride, StrideW: stride,
		PadH: k / 2, PadW: k / 2, DilationH: 1, DilationW: 1}
	c := Conv2d{Unfold: u, OutChans: cout, BN: true, BNEps: 1e-5, ReLU: relu, Residual: len(res) > 0}
	ws := []bench.ArraySpec{{Name: "visual." + name + ".weight", Shape: bench.Shape{cout, cin, k, k}}}
	for _, s := range []string{"weight", "bias", "running_mean", "running_var"} {
		ws = append(ws, bench.ArraySpec{Name: "visual." + bn + "." + s, Shape: bench.Shape{cout}})
	}
	if record {
		r.weights = append(r.weights, ws...)
		r.macs += c.macsOf()
	}
	ins := []string{in}
	for _, a := range ws {
		ins = append(ins, a.Name)
	}
	g.Temp(out, bench.Shape{r.batch, cout, u.OutH(), u.OutW()})
	g.Steps = append(g.Steps, bench.Step{Node: c, In: append(ins, res...), Out: []string{out}})
	return u.OutH()
}

// pool appends nn.AvgPool2d(k) (kernel = stride = k) on a [B, c, h, h] map.
func (r *clipResNet) pool(g *bench.Graph, in, out string, c, h, k int) int {
	g.Temp(out, bench.Shape{r.batch, c, h / k, h / k})
	g.Steps = append(g.Steps, bench.Step{Node: AvgPool2d{Batch: r.batch, Chans: c, Height: h, Width: h, KH: k, KW: k, SH: k, SW: k,
		CountIncludePad: true}, In: []string{in}, Out: []string{out}})
	return h / k
}

// steps: the stem (three 3×3 convs, the first stride 2, then a 2×2
// average pool), layer1..4 of Bottlenecks (stride in an average pool
// after the 3×3 conv and before the shortcut's 1×1 conv), then the
// attention pool: the mean token in front, positions added, one
// multi-head attention whose only query is that token, c_proj.
func (r *clipResNet) steps(g *bench.Graph, record bool) {
	w := r.width
	h := r.conv(g, record, "conv1", "bn1", "image", "rn.stem1", 3, w/2, r.res, 3, 2, true)
	h = r.conv(g, record, "conv2", "bn2", "rn.stem1", "rn.stem2", w/2, w/2, h, 3, 1, true)
	h = r.conv(g, record, "conv3", "bn3", "rn.stem2", "rn.stem3", w/2, w, h, 3, 1, true)
	h = r.pool(g, "rn.stem3", "rn.x", w, h, 2)
	x, cin := "rn.x", w
	for s, blocks := range r.layers {
		planes := w << s
		for j := 0; j < blocks; j++ {
			stride := 1
			if j == 0 && s > 0 {
				stride = 2
			}
			p := fmt.Sprintf("layer%d.%d.", s+1, j)
			t := fmt.Sprintf("rn.l%d.", s+1)
			out := t
			if j == 0 {
				t += "first." // before its stride: the layer's other blocks run at a smaller size
			}
			hi := r.conv(g, record, p+"conv1", p+"bn1", x, t+"a", cin, planes, h, 1, 1, true)
			hi = r.conv(g, record, p+"conv2", p+"bn2", t+"a", t+"b", planes, planes, hi, 3, 1, true)
			mid := t + "b"
			if stride > 1 {
				hi = r.pool(g, t+"b", t+"bp", planes, hi, stride)
				mid = t + "bp"
			}
			short := x
			if stride > 1 || cin != 4*planes {
				src, hs := x, h
				if stride > 1 {
					hs = r.pool(g, x, t+"xp", cin, h, stride)
					src = t + "xp"
				}
				r.conv(g, record, p+"downsample.0", p+"downsample.1", src, t+"short", cin, 4*planes, hs, 1, 1, false)
				short = t + "short"
			}
			next := out + "out0"
			if x == next {
				next = out + "out1"
			}
			r.conv(g, record, p+"conv3", p+"bn3", mid, next, planes, 4*planes, hi, 1, 1, true, short)
			x, cin, h = next, 4*planes, hi
		}
	}
	r.attnPool(g, record, x, cin, h)
}

// attnPool appends AttentionPool2d on the [B, C, s, s] map x.
func (r *clipResNet) attnPool(g *bench.Graph, record bool, x string, c, s int) {
	b, n := r.batch, s*s+1
	ap := "visual.attnpool."
	ws := []bench.ArraySpec{{Name: ap + "positional_embedding", Shape: bench.Shape{n, c}}}
	for _, p := range []string{"k_proj", "q_proj", "v_proj"} {
		ws = append(ws, bench.ArraySpec{Name: ap + p + ".weight", Shape: bench.Shape{c, c}}, bench.ArraySpec{Name: ap + p + ".bias", Shape: bench.Shape{c}})
	}
	ws = append(ws, bench.ArraySpec{Name: ap + "c_proj.weight", Shape: bench.Shape{r.out, c}}, bench.ArraySpec{Name: ap + "c_proj.bias", Shape: bench.Shape{r.out}})
	pool := AttnPool{Batch: b, Tokens: n, Chans: c, Heads: r.heads, Scale: 1 / sqrtInt(c/r.heads)}
	if record {
		r.weights = append(r.weights, ws...)
		r.macs += pool.MACs() + int64(b)*int64(c)*int64(r.out)
	}
	tok := bench.Shape{b, n, c}
	g.Temp("rn.flat", bench.Shape{b, n - 1, c})
	g.Temp("rn.tokens", tok)
	g.Temp("rn.ctx", bench.Shape{b, 1, c})
	g.Temp("rn.features", bench.Shape{b, 1, r.out})
	lin := func(in, name, out string, m, nOut int) bench.Step {
		return bench.Step{Node: Gemm{Batch: b, M: m, N: nOut, K: c, TransB: true, Bias: true},
			In: []string{in, ap + name + ".weight", ap + name + ".bias"}, Out: []string{out}}
	}
	g.Steps = append(g.Steps,
		bench.Step{Node: FlattenLevels{Batch: b, Chans: c, Levels: LevelsOf([2]int{s, s})}, In: []string{x}, Out: []string{"rn.flat"}},
		bench.Step{Node: AttnPoolTokens{Batch: b, Tokens: n - 1, Chans: c}, In: []string{"rn.flat", ap + "positional_embedding"},
			Out: []string{"rn.tokens"}},
		bench.Step{Node: pool, In: []string{"rn.tokens", ap + "q_proj.weight", ap + "q_proj.bias", ap + "k_proj.weight",
			ap + "k_proj.bias", ap + "v_proj.weight", ap + "v_proj.bias"}, Out: []string{"rn.ctx"}},
		lin("rn.ctx", "c_proj", "rn.features", 1, r.out),
		bench.Step{Node: Reshape{From: bench.Shape{b, 1, r.out}, To: bench.Shape{b, r.out}}, In: []string{"rn.features"},
			Out: []string{"image_features"}})
}

func (r *clipResNet) input() bench.ArraySpec          { return r.Inputs()[0] }
func (r *clipResNet) towerWeights() []bench.ArraySpec { return r.weights }
func (r *clipResNet) towerMACs() int64                { return r.macs }
func (r *clipResNet) towerSteps(g *bench.Graph)       { r.steps(g, false) }
func (r *clipResNet) images() int                     { return r.batch }

func init() { bench.RegisterOpKind(clipResNetKind{}) }
