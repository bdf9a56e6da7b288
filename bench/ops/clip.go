package ops

import (
	"encoding/json"
	"fmt"
	"math"

	"vitbench/bench"
	"vitbench/bench/synth"
	"vitbench/internal/mutation"
)

// OpenAI's CLIP (docs/reference-notes.md, CLIP): the image tower
// (clip_visual: VisionTransformer), the text tower (clip_text) and the
// network (clip) that compares a batch of images with a set of texts.
// Weights carry the released checkpoints' state_dict keys.

// CLIPVisualParams is the JSON form of a clip_visual case, the arguments
// of CLIP's VisionTransformer.
type CLIPVisualParams struct {
	InputResolution int `json:"input_resolution"`
	PatchSize       int `json:"patch_size"`
	Width           int `json:"width"`
	Layers          int `json:"layers"`
	Heads           int `json:"heads"`
	OutputDim       int `json:"output_dim"`
}

// CLIPTextParams is the JSON form of a clip_text case: CLIP's text tower.
type CLIPTextParams struct {
	ContextLength int `json:"context_length"`
	VocabSize     int `json:"vocab_size"`
	Width         int `json:"width"`
	Heads         int `json:"heads"`
	Layers        int `json:"layers"`
	EmbedDim      int `json:"embed_dim"`
}

// CLIPParams is the JSON form of a clip case: CLIP's constructor
// arguments — vision_layers one integer for a ViT image tower, a list of
// 4 block counts for a ModifiedResNet one (then without
// vision_patch_size) — vision_heads (default vision_width/64 for a ViT,
// vision_width·32/64 for a ResNet, as CLIP computes them) and texts, the
// number of token sequences every image is compared with.
type CLIPParams struct {
	EmbedDim          int        `json:"embed_dim"`
	ImageResolution   int        `json:"image_resolution"`
	VisionLayers      clipLayers `json:"vision_layers"`
	VisionWidth       int        `json:"vision_width"`
	VisionPatchSize   int        `json:"vision_patch_size"`
	VisionHeads       *int       `json:"vision_heads,omitempty"`
	ContextLength     int        `json:"context_length"`
	VocabSize         int        `json:"vocab_size"`
	TransformerWidth  int        `json:"transformer_width"`
	TransformerHeads  int        `json:"transformer_heads"`
	TransformerLayers int        `json:"transformer_layers"`
	Texts             int        `json:"texts"`
}

func sqrtInt(n int) float64 { return math.Sqrt(float64(n)) }

// clipLayers is CLIP's vision_layers: an integer (ViT blocks) or a list of
// the ResNet's 4 block counts.
type clipLayers struct {
	n      int
	resnet []int
}

// UnmarshalJSON accepts 12 or [3, 4, 6, 3].
func (l *clipLayers) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &l.n); err == nil {
		return nil
	}
	if err := json.Unmarshal(b, &l.resnet); err != nil || len(l.resnet) != 4 {
		return fmt.Errorf("vision_layers: want an integer (ViT) or a list of 4 block counts (ResNet), got %s", b)
	}
	return nil
}

// clipTower is an image tower of the clip network: it reads input() and
// writes image_features [images, embed_dim].
type clipTower interface {
	input() bench.ArraySpec
	towerWeights() []bench.ArraySpec
	towerMACs() int64
	towerSteps(g *bench.Graph)
	images() int
}

func (v clipVisual) towerWeights() []bench.ArraySpec { return v.weights() }
func (v clipVisual) towerMACs() int64                { return v.macs() }
func (v clipVisual) towerSteps(g *bench.Graph)       { v.steps(g, "image_features") }
func (v clipVisual) images() int                     { return v.batch }

// CLIPNoLnPre names the mutation (internal/mutation, builds with the
// "mutation" tag only) that leaves ln_pre out of the image tower.
const CLIPNoLnPre = "clip_no_ln_pre"

// clipVisual is the ViT image tower over batch images.
type clipVisual struct {
	batch, res, patch, out int
	t                      clipTransformer
}

func (v clipVisual) grid() int   { return v.res / v.patch }
func (v clipVisual) tokens() int { return v.grid()*v.grid() + 1 }

func parseCLIPVisual(op string, p CLIPVisualParams, batch int) (clipVisual, error) {
	if err := positive(op, "input_resolution", p.InputResolution, "patch_size", p.PatchSize, "output_dim", p.OutputDim); err != nil {
		return clipVisual{}, err
	}
	if err := checkDims(op, "input_resolution", p.InputResolution, "output_dim", p.OutputDim, "patch_size", p.PatchSize); err != nil {
		return clipVisual{}, err
	}
	if p.InputResolution < p.PatchSize {
		return clipVisual{}, fmt.Errorf("%s params: input_resolution %d is smaller than one patch (%d)", op, p.InputResolution, p.PatchSize)
	}
	v := clipVisual{batch: batch, res: p.InputResolution, patch: p.PatchSize, out: p.OutputDim}
	t, err := newCLIPTransformer(op, batch, v.tokens(), p.Width, p.Heads, p.Layers, false)
	v.t = t
	return v, err
}

func (v clipVisual) input() bench.ArraySpec {
	return bench.ArraySpec{Name: "image", Shape: bench.Shape{v.batch, 3, v.res, v.res}}
}

func (v clipVisual) weights() []bench.ArraySpec {
	w := v.t.width
	out := []bench.ArraySpec{
		{Name: "visual.class_embedding", Shape: bench.Shape{w}},
		{Name: "visual.positional_embedding", Shape: bench.Shape{v.tokens(), w}},
		{Name: "visual.proj", Shape: bench.Shape{w, v.out}},
		{Name: "visual.conv1.weight", Shape: bench.Shape{w, 3, v.patch, v.patch}},
		{Name: "visual.ln_pre.weight", Shape: bench.Shape{w}},
		{Name: "visual.ln_pre.bias", Shape: bench.Shape{w}},
	}
	out = append(out, v.t.weights("visual.transformer.")...)
	return append(out, bench.ArraySpec{Name: "visual.ln_post.weight", Shape: bench.Shape{w}},
		bench.ArraySpec{Name: "visual.ln_post.bias", Shape: bench.Shape{w}})
}

func (v clipVisual) macs() int64 {
	b, w, g := int64(v.batch), int64(v.t.width), int64(v.grid())
	return b*g*g*w*int64(3*v.patch*v.patch) + v.t.macs() + b*w*int64(v.out)
}

// steps: conv1 (no bias) → [class_embedding, patches] + positional_embedding
// → ln_pre → the blocks → ln_post on the class token → @ proj (no bias),
// writing out [B, output_dim].
func (v clipVisual) steps(g *bench.Graph, out string) {
	b, w, n, t := v.batch, v.t.width, v.grid()*v.grid(), v.tokens()
	tok := bench.Shape{b, t, w}
	g.Temp("visual.patches", bench.Shape{b, n, w})
	g.Temp("visual.cls", bench.Shape{1, 1, w})
	g.Temp("visual.pos", bench.Shape{1, t, w})
	g.Temp("visual.embed", tok)
	g.Temp("visual.ln_pre", tok)
	g.Temp("visual.final", tok)
	g.Temp("visual.token", bench.Shape{b, 1, w})
	g.Temp("visual.token_norm", bench.Shape{b, 1, w})
	g.Temp("visual.features", bench.Shape{b, 1, v.out})
	g.Steps = append(g.Steps,
		bench.Step{Node: PatchEmbed{Batch: b, InChans: 3, Height: v.res, Width: v.res, EmbedDim: w, PatchH: v.patch, PatchW: v.patch},
			In: []string{"image", "visual.conv1.weight"}, Out: []string{"visual.patches"}},
		bench.Step{Node: Reshape{From: bench.Shape{w}, To: bench.Shape{1, 1, w}}, In: []string{"visual.class_embedding"}, Out: []string{"visual.cls"}},
		bench.Step{Node: Reshape{From: bench.Shape{t, w}, To: bench.Shape{1, t, w}}, In: []string{"visual.positional_embedding"}, Out: []string{"visual.pos"}},
		bench.Step{Node: TokensPrefix{Batch: b, Patches: n, Dim: w, Prefix: 1},
			In: []string{"visual.patches", "visual.cls", "visual.pos"}, Out: []string{"visual.embed"}})
	lnPre := bench.Step{Node: LayerNorm{Batch: b, Tokens: t, Dim: w, Eps: clipEps},
		In: []string{"visual.embed", "visual.ln_pre.weight", "visual.ln_pre.bias"}, Out: []string{"visual.ln_pre"}}
	if mutation.On(CLIPNoLnPre) {
		lnPre = bench.Step{Node: Reshape{From: tok, To: tok}, In: []string{"visual.embed"}, Out: []string{"visual.ln_pre"}}
	}
	g.Steps = append(g.Steps, lnPre)
	v.t.steps(g, "visual.transformer.", "visual.", "visual.ln_pre", "visual.final")
	g.Steps = append(g.Steps,
		bench.Step{Node: TakeToken{Batch: b, Tokens: t, Dim: w, Index: 0}, In: []string{"visual.final"}, Out: []string{"visual.token"}},
		bench.Step{Node: LayerNorm{Batch: b, Tokens: 1, Dim: w, Eps: clipEps},
			In: []string{"visual.token", "visual.ln_post.weight", "visual.ln_post.bias"}, Out: []string{"visual.token_norm"}},
		bench.Step{Node: Gemm{Batch: b, M: 1, N: v.out, K: w}, In: []string{"visual.token_norm", "visual.proj"}, Out: []string{"visual.features"}},
		bench.Step{Node: Reshape{From: bench.Shape{b, 1, v.out}, To: bench.Shape{b, v.out}}, In: []string{"visual.features"}, Out: []string{out}})
}

// clipText is the text tower over batch token sequences.
type clipText struct {
	batch, context, vocab, embed int
	t                            clipTransformer
}

func parseCLIPText(op string, p CLIPTextParams, batch int) (clipText, error) {
	if err := positive(op, "context_length", p.ContextLength, "vocab_size", p.VocabSize, "embed_dim", p.EmbedDim); err != nil {
		return clipText{}, err
	}
	if err := checkDims(op, "context_length", p.ContextLength, "vocab_size", p.VocabSize, "embed_dim", p.EmbedDim); err != nil {
		return clipText{}, err
	}
	if p.VocabSize > 1<<24 {
		return clipText{}, fmt.Errorf("%s params: vocab_size %d: token ids above 2^24 are not exact in float32", op, p.VocabSize)
	}
	t, err := newCLIPTransformer(op, batch, p.ContextLength, p.Width, p.Heads, p.Layers, true)
	return clipText{batch: batch, context: p.ContextLength, vocab: p.VocabSize, embed: p.EmbedDim, t: t}, err
}

func (c clipText) input() bench.ArraySpec {
	return bench.ArraySpec{Name: "text", Shape: bench.Shape{c.batch, c.context}}
}

func (c clipText) weights() []bench.ArraySpec {
	w := c.t.width
	out := []bench.ArraySpec{
		{Name: "positional_embedding", Shape: bench.Shape{c.context, w}},
		{Name: "text_projection", Shape: bench.Shape{w, c.embed}},
	}
	out = append(out, c.t.weights("transformer.")...)
	return append(out, bench.ArraySpec{Name: "token_embedding.weight", Shape: bench.Shape{c.vocab, w}},
		bench.ArraySpec{Name: "ln_final.weight", Shape: bench.Shape{w}}, bench.ArraySpec{Name: "ln_final.bias", Shape: bench.Shape{w}})
}

func (c clipText) macs() int64 { return c.t.macs() + int64(c.batch)*int64(c.t.width)*int64(c.embed) }

// steps: token_embedding + positional_embedding → the causal blocks →
// the end-of-text token → ln_final → @ text_projection (no bias), writing
// out [B, embed_dim]. ln_final is row-wise, so it runs on the pooled row
// only: the same values as normalizing every position first.
func (c clipText) steps(g *bench.Graph, out string) {
	b, l, w := c.batch, c.context, c.t.width
	tok := bench.Shape{b, l, w}
	g.Temp("text.embed", tok)
	g.Temp("text.final", tok)
	g.Temp("text.eot", bench.Shape{b, 1, w})
	g.Temp("text.eot_norm", bench.Shape{b, 1, w})
	g.Temp("text.features", bench.Shape{b, 1, c.embed})
	g.Steps = append(g.Steps, bench.Step{Node: TokenEmbed{Batch: b, Context: l, Vocab: c.vocab, Width: w},
		In: []string{"text", "token_embedding.weight", "positional_embedding"}, Out: []string{"text.embed"}})
	c.t.steps(g, "transformer.", "text.", "text.embed", "text.final")
	g.Steps = append(g.Steps,
		bench.Step{Node: EOTPool{Batch: b, Context: l, Width: w}, In: []string{"text.final", "text"}, Out: []string{"text.eot"}},
		bench.Step{Node: LayerNorm{Batch: b, Tokens: 1, Dim: w, Eps: clipEps},
			In: []string{"text.eot", "ln_final.weight", "ln_final.bias"}, Out: []string{"text.eot_norm"}},
		bench.Step{Node: Gemm{Batch: b, M: 1, N: c.embed, K: w}, In: []string{"text.eot_norm", "text_projection"}, Out: []string{"text.features"}},
		bench.Step{Node: Reshape{From: bench.Shape{b, 1, c.embed}, To: bench.Shape{b, c.embed}}, In: []string{"text.features"}, Out: []string{out}})
}

type clipVisualKind struct{}

func (clipVisualKind) Name() string { return "clip_visual" }
func (clipVisualKind) Summary() string {
	return "CLIP VisionTransformer: conv1 (no bias), class token, ln_pre, QuickGELU blocks, ln_post, proj"
}

func (clipVisualKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p CLIPVisualParams
	if err := decodeStrict("clip_visual", raw, &p); err != nil {
		return nil, err
	}
	v, err := parseCLIPVisual("clip_visual", p, batch)
	if err != nil {
		return nil, err
	}
	return &clipVisualSpec{v}, nil
}

type clipVisualSpec struct{ v clipVisual }

func (s *clipVisualSpec) Op() string                 { return "clip_visual" }
func (s *clipVisualSpec) Inputs() []bench.ArraySpec  { return []bench.ArraySpec{s.v.input()} }
func (s *clipVisualSpec) Weights() []bench.ArraySpec { return s.v.weights() }
func (s *clipVisualSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "image_features", Shape: bench.Shape{s.v.batch, s.v.out}}}
}
func (s *clipVisualSpec) MACs() int64   { return s.v.macs() }
func (s *clipVisualSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *clipVisualSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *clipVisualSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.v.steps(g, "image_features")
	return g
}

type clipTextKind struct{}

func (clipTextKind) Name() string { return "clip_text" }
func (clipTextKind) Summary() string {
	return "CLIP text tower: token + position embedding, causal QuickGELU blocks, EOT token, ln_final, projection"
}

func (clipTextKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p CLIPTextParams
	if err := decodeStrict("clip_text", raw, &p); err != nil {
		return nil, err
	}
	c, err := parseCLIPText("clip_text", p, batch)
	if err != nil {
		return nil, err
	}
	return &clipTextSpec{c}, nil
}

type clipTextSpec struct{ c clipText }

func (s *clipTextSpec) Op() string                 { return "clip_text" }
func (s *clipTextSpec) Inputs() []bench.ArraySpec  { return []bench.ArraySpec{s.c.input()} }
func (s *clipTextSpec) Weights() []bench.ArraySpec { return s.c.weights() }
func (s *clipTextSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "text_features", Shape: bench.Shape{s.c.batch, s.c.embed}}}
}
func (s *clipTextSpec) MACs() int64   { return s.c.macs() }
func (s *clipTextSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *clipTextSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *clipTextSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.c.steps(g, "text_features")
	return g
}

type clipKind struct{}

func (clipKind) Name() string { return "clip" }
func (clipKind) Summary() string {
	return "CLIP: image and text towers, L2-normalized features, exp(logit_scale)·image·textᵀ"
}

func (clipKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p CLIPParams
	if err := decodeStrict("clip", raw, &p); err != nil {
		return nil, err
	}
	if err := positive("clip", "texts", p.Texts, "vision_width", p.VisionWidth); err != nil {
		return nil, err
	}
	if err := checkDims("clip", "texts", p.Texts, "vision_width", p.VisionWidth); err != nil {
		return nil, err
	}
	var v clipTower
	if p.VisionLayers.resnet != nil {
		heads := p.VisionWidth * 32 / 64
		if p.VisionHeads != nil {
			heads = *p.VisionHeads
		}
		if p.VisionPatchSize != 0 {
			return nil, fmt.Errorf("clip params: vision_patch_size is for a ViT image tower, not a ResNet (vision_layers a list)")
		}
		r, err := clipResNetKind{}.Parse(mustJSON(CLIPResNetParams{Layers: p.VisionLayers.resnet, OutputDim: p.EmbedDim,
			Heads: heads, InputResolution: p.ImageResolution, Width: p.VisionWidth}), batch)
		if err != nil {
			return nil, fmt.Errorf("clip: %v", err)
		}
		v = r.(*clipResNet)
	} else {
		heads := p.VisionWidth / 64
		if p.VisionHeads != nil {
			heads = *p.VisionHeads
		}
		vit, err := parseCLIPVisual("clip", CLIPVisualParams{InputResolution: p.ImageResolution, PatchSize: p.VisionPatchSize,
			Width: p.VisionWidth, Layers: p.VisionLayers.n, Heads: heads, OutputDim: p.EmbedDim}, batch)
		if err != nil {
			return nil, err
		}
		v = vit
	}
	c, err := parseCLIPText("clip", CLIPTextParams{ContextLength: p.ContextLength, VocabSize: p.VocabSize,
		Width: p.TransformerWidth, Heads: p.TransformerHeads, Layers: p.TransformerLayers, EmbedDim: p.EmbedDim}, p.Texts)
	if err != nil {
		return nil, err
	}
	return &clipSpec{v: v, c: c, embed: p.EmbedDim}, nil
}

type clipSpec struct {
	v     clipTower
	c     clipText
	embed int
}

func (s *clipSpec) Op() string { return "clip" }
func (s *clipSpec) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{s.v.input(), s.c.input()}
}
func (s *clipSpec) Weights() []bench.ArraySpec {
	w := s.v.towerWeights()
	w = append(w, s.c.weights()...)
	return append(w, bench.ArraySpec{Name: "logit_scale", Shape: bench.Shape{}})
}

// Outputs: logits [images, texts], CLIP's logits_per_image (its
// logits_per_text is the transpose).
func (s *clipSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "logits", Shape: bench.Shape{s.v.images(), s.c.batch}}}
}
func (s *clipSpec) MACs() int64 {
	return s.v.towerMACs() + s.c.macs() + ClipLogits{Images: s.v.images(), Texts: s.c.batch, Dim: s.embed}.macs()
}
func (s *clipSpec) Bytes() int64 { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }

// Params counts the learned tensors (a ResNet tower's BatchNorm running
// statistics are buffers).
func (s *clipSpec) Params() int64 { return bench.BytesOf(s.Weights())/4 - bufferParams(s.Weights()) }
func (s *clipSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	g.Temp("image_features", bench.Shape{s.v.images(), s.embed})
	g.Temp("text_features", bench.Shape{s.c.batch, s.c.embed})
	s.v.towerSteps(g)
	s.c.steps(g, "text_features")
	g.Steps = append(g.Steps, bench.Step{Node: ClipLogits{Images: s.v.images(), Texts: s.c.batch, Dim: s.embed},
		In: []string{"image_features", "text_features", "logit_scale"}, Out: []string{"logits"}})
	return g
}

func init() {
	bench.RegisterOpKind(clipVisualKind{})
	bench.RegisterOpKind(clipTextKind{})
	bench.RegisterOpKind(clipKind{})
}

// tokenIDs are synthesized token ids for timing and backend agreement
// (fixtures store the exporter's): per sequence start-of-text (vocab − 2),
// tokens in [1, vocab − 2), end-of-text (vocab − 1) and zeros, the first
// sequence filling the context, the others ending at positions drawn from
// the generator.
func tokenIDs(batch, context, vocab int, seed uint64) []float32 {
	u := synth.Generate(seed, "text", synth.Params{Center: 0.5, Scale: 0.5}, batch*context)
	out := make([]float32, batch*context)
	for s := 0; s < batch; s++ {
		row, draw := out[s*context:(s+1)*context], u[s*context:(s+1)*context]
		end := context - 1
		if s > 0 {
			end = 1 + int(draw[0]*float32(context-1))
			end = min(end, context-1)
		}
		row[0] = float32(vocab - 2)
		for t := 1; t < end; t++ {
			row[t] = float32(1 + int(draw[t]*float32(max(vocab-3, 1)))%max(vocab-3, 1))
		}
		row[end] = float32(vocab - 1)
	}
	return out
}

// SynthInput implements runner.InputSynthesizer: the token ids.
func (s *clipTextSpec) SynthInput(name string, seed uint64) []float32 {
	if name != "text" {
		return nil
	}
	return tokenIDs(s.c.batch, s.c.context, s.c.vocab, seed)
}

// SynthInput implements runner.InputSynthesizer: the token ids.
func (s *clipSpec) SynthInput(name string, seed uint64) []float32 {
	if name != "text" {
		return nil
	}
	return tokenIDs(s.c.batch, s.c.context, s.c.vocab, seed)
}
