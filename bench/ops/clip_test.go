package ops

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"vitbench/bench"
)

// TestCLIPParamsAndMACs checks the parameter counts of OpenAI's CLIP
// towers (docs/reference-notes.md, CLIP: counted by instantiating the
// original modules) exactly, and their MACs within 1%.
func TestCLIPParamsAndMACs(t *testing.T) {
	vit := func(res, patch, width, layers, out int) string {
		return mustString(CLIPVisualParams{InputResolution: res, PatchSize: patch, Width: width, Layers: layers,
			Heads: width / 64, OutputDim: out})
	}
	text := func(width, embed int) string {
		return mustString(CLIPTextParams{ContextLength: 77, VocabSize: 49408, Width: width, Heads: width / 64, Layers: 12, EmbedDim: embed})
	}
	for _, c := range []struct {
		name, op, params string
		want             int64
		gmacs            float64
	}{
		{"ViT-B/32", "clip_visual", vit(224, 32, 768, 12, 512), 87849216, 4.41},
		{"ViT-B/16", "clip_visual", vit(224, 16, 768, 12, 512), 86192640, 17.56},
		{"ViT-L/14", "clip_visual", vit(224, 14, 1024, 24, 768), 303966208, 81.01},
		{"ViT-L/14@336", "clip_visual", vit(336, 14, 1024, 24, 768), 304293888, 190.96},
		{"text 512", "clip_text", text(512, 512), 63428096, 2.98},
		{"text 768", "clip_text", text(768, 768), 123650304, 0},
		{"ViT-B/32 network", "clip", `{"embed_dim": 512, "image_resolution": 224, "vision_layers": 12, "vision_width": 768,
			"vision_patch_size": 32, "context_length": 77, "vocab_size": 49408, "transformer_width": 512,
			"transformer_heads": 8, "transformer_layers": 12, "texts": 1}`, 151277313, 0},
		{"RN50 network", "clip", `{"embed_dim": 1024, "image_resolution": 224, "vision_layers": [3, 4, 6, 3], "vision_width": 64,
			"context_length": 77, "vocab_size": 49408, "transformer_width": 512, "transformer_heads": 8,
			"transformer_layers": 12, "texts": 1}`, 102007137, 0},
		{"RN50", "clip_resnet", `{"layers": [3, 4, 6, 3], "output_dim": 1024, "heads": 32, "input_resolution": 224, "width": 64}`,
			38316896, 5.79},
	} {
		k, err := bench.LookupOpKind(c.op)
		if err != nil {
			t.Fatal(err)
		}
		s, err := k.Parse(json.RawMessage(c.params), 1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := s.Params(); got != c.want {
			t.Errorf("%s: %d parameters, the original has %d", c.name, got, c.want)
		}
		if c.gmacs > 0 {
			if got := float64(s.MACs()) / 1e9; math.Abs(got-c.gmacs)/c.gmacs > 0.01 {
				t.Errorf("%s: %.3f GMACs, the original does %.2f", c.name, got, c.gmacs)
			}
		}
		if err := s.Graph().Validate(s); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestCLIPGraph checks what distinguishes CLIP's graphs from timm's ViT:
// QuickGELU in every MLP, the causal mask in the text tower only, ln_pre
// before the first block, no bias on conv1 or the projections.
func TestCLIPGraph(t *testing.T) {
	s, err := clipKind{}.Parse(json.RawMessage(`{"embed_dim": 16, "image_resolution": 32, "vision_layers": 2,
		"vision_width": 64, "vision_patch_size": 8, "vision_heads": 2, "context_length": 9, "vocab_size": 50,
		"transformer_width": 32, "transformer_heads": 2, "transformer_layers": 2, "texts": 3}`), 2)
	if err != nil {
		t.Fatal(err)
	}
	g := s.Graph()
	if err := g.Validate(s); err != nil {
		t.Fatal(err)
	}
	var causal, plain, quick int
	firstBlock, lnPre := -1, -1
	for i, st := range g.Steps {
		switch n := st.Node.(type) {
		case AttentionCore:
			if n.Causal != strings.HasPrefix(st.Out[0], "text.") {
				t.Errorf("step %d: attention writing %s has Causal %v", i, st.Out[0], n.Causal)
			}
			if n.Causal {
				causal++
			} else {
				plain++
			}
		case Gemm:
			if n.Act != "" && n.Act != "quick_gelu" {
				t.Errorf("step %d: activation %q", i, n.Act)
			}
			if n.Act == "quick_gelu" {
				quick++
			}
			if strings.HasSuffix(st.In[1], "proj") || st.In[1] == "text_projection" {
				if n.Bias || len(st.In) != 2 {
					t.Errorf("step %d: %s with a bias", i, st.In[1])
				}
			}
			if firstBlock < 0 && strings.Contains(st.In[1], "resblocks.0.") {
				firstBlock = i
			}
		case PatchEmbed:
			if n.Bias {
				t.Error("conv1 has a bias")
			}
		case LayerNorm:
			if st.In[1] == "visual.ln_pre.weight" {
				lnPre = i
			}
			if n.Eps != 1e-5 {
				t.Errorf("step %d: LayerNorm eps %g", i, n.Eps)
			}
		}
	}
	if causal != 2 || plain != 2 || quick != 4 {
		t.Errorf("%d causal and %d plain attentions, %d QuickGELU MLPs; want 2, 2, 4", causal, plain, quick)
	}
	if lnPre < 0 || lnPre > firstBlock {
		t.Errorf("ln_pre at step %d, the first block at %d", lnPre, firstBlock)
	}
	if got := s.Outputs()[0].Shape; !got.Equal(bench.Shape{2, 3}) {
		t.Errorf("logits %v, want [images, texts] = [2, 3]", got)
	}
}

func mustString(v any) string { return string(mustJSON(v)) }

// TestCLIPTokenIDs: the synthesized token ids that timing and agreement
// runs use are what the tokenizer makes (SOT, tokens, one EOT, zeros), the
// first sequence filling the context and the others ending early.
func TestCLIPTokenIDs(t *testing.T) {
	s, err := clipTextKind{}.Parse(json.RawMessage(`{"context_length": 77, "vocab_size": 49408, "width": 64,
		"heads": 1, "layers": 1, "embed_dim": 8}`), 6)
	if err != nil {
		t.Fatal(err)
	}
	ids := s.(*clipTextSpec).SynthInput("text", 1)
	if len(ids) != 6*77 {
		t.Fatalf("%d ids", len(ids))
	}
	short := 0
	for b := 0; b < 6; b++ {
		row := ids[b*77 : (b+1)*77]
		end := -1
		for i, v := range row {
			if v != float32(int(v)) || v < 0 || v >= 49408 {
				t.Fatalf("sequence %d: id %g at %d", b, v, i)
			}
			if v == 49407 {
				if end >= 0 {
					t.Fatalf("sequence %d: two EOT tokens", b)
				}
				end = i
			}
		}
		if row[0] != 49406 || end < 1 || (b == 0 && end != 76) {
			t.Fatalf("sequence %d: starts with %g, EOT at %d", b, row[0], end)
		}
		for i := 1; i < end; i++ {
			if row[i] < 1 || row[i] >= 49406 {
				t.Fatalf("sequence %d: token %g at %d", b, row[i], i)
			}
		}
		for _, v := range row[end+1:] {
			if v != 0 {
				t.Fatalf("sequence %d: %g after EOT", b, v)
			}
		}
		if end < 76 {
			short++
		}
	}
	if short != 5 {
		t.Errorf("%d of the 5 later sequences end before the context", short)
	}
	if (&clipTextSpec{}).SynthInput("image", 1) != nil {
		t.Error("SynthInput answers for an input other than text")
	}
}
