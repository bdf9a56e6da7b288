package ops

import (
	"math"
	"testing"

	"vitbench/bench"
)

// vqImageNet is taming's configs/imagenet_vqgan.yaml (f16, codebook 1024).
const vqImageNet = `"resolution": 256, "in_channels": 3, "out_ch": 3, "ch": 128, "ch_mult": [1, 1, 2, 2, 4],
	"num_res_blocks": 2, "attn_resolutions": [16], "z_channels": 256`

// TestVQGANParamsAndMACs checks the parameter counts of the ImageNet f16
// VQGAN (docs/reference-notes.md, VQGAN: counted by instantiating the
// original modules) exactly, and the MACs at 256×256 within 1%.
func TestVQGANParamsAndMACs(t *testing.T) {
	for _, c := range []struct {
		op, params string
		want       int64
		gmacs      float64
	}{
		{"vq_encoder", "{" + vqImageNet + "}", 29298176, 69.20},
		{"vq_decoder", "{" + vqImageNet + "}", 42449795, 126.36},
		{"vqgan", "{" + vqImageNet + `, "embed_dim": 256, "n_embed": 1024}`, 72141699, 195.7},
		{"vector_quantize", `{"chans": 256, "codes": 1024, "img_size": 16}`, 262144, 0.067},
		{"vq_resnet_block", `{"in_chans": 128, "out_chans": 256, "img_size": 64}`, 919040, 0},
		{"vq_attn_block", `{"chans": 512, "img_size": 16}`, 1051648, 0},
		{"vq_downsample", `{"chans": 128, "img_size": 256}`, 147584, 0},
		{"vq_upsample", `{"chans": 512, "img_size": 16}`, 2359808, 0},
	} {
		k, err := bench.LookupOpKind(c.op)
		if err != nil {
			t.Fatal(err)
		}
		s, err := k.Parse([]byte(c.params), 1)
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		if got := s.Params(); got != c.want {
			t.Errorf("%s: %d params, want %d", c.op, got, c.want)
		}
		if c.gmacs > 0 {
			if g := float64(s.MACs()) / 1e9; math.Abs(g-c.gmacs) > 0.01*c.gmacs {
				t.Errorf("%s: %.2f GMACs, want %.2f (±1%%)", c.op, g, c.gmacs)
			}
		}
		if err := s.Graph().Validate(s); err != nil {
			t.Errorf("%s: %v", c.op, err)
		}
	}
}

// TestVQGANOddSize: a 250×37 image gives 15×2 latents (each Downsample
// ⌊(n − 2)/2⌋ + 1: 250 → 125 → 62 → 31 → 15) and a 240×32 reconstruction;
// bad params are errors.
func TestVQGANOddSize(t *testing.T) {
	k, _ := bench.LookupOpKind("vqgan")
	s, err := k.Parse([]byte("{"+vqImageNet+`, "embed_dim": 256, "n_embed": 1024, "img_size": [250, 37]}`), 2)
	if err != nil {
		t.Fatal(err)
	}
	out := s.Outputs()
	if !out[0].Shape.Equal(bench.Shape{2, 3, 240, 32}) || !out[1].Shape.Equal(bench.Shape{2, 15, 2}) {
		t.Errorf("outputs %v, want dec [2 3 240 32] and indices [2 15 2]", out)
	}
	for _, bad := range []string{
		"{" + vqImageNet + `}`, // no codebook
		`{"resolution": 256, "in_channels": 3, "out_ch": 3, "ch": 100, "ch_mult": [1], "num_res_blocks": 1, "attn_resolutions": [], "z_channels": 4, "embed_dim": 4, "n_embed": 8}`,
		"{" + vqImageNet + `, "embed_dim": 256, "n_embed": 1024, "z_size": 16}`,
		"{" + vqImageNet + `, "embed_dim": 256, "n_embed": 1024, "img_size": 15}`,
	} {
		if _, err := k.Parse([]byte(bad), 1); err == nil {
			t.Errorf("vqgan accepted %s", bad)
		}
	}
}

// TestMinGPTParams: the D-RIN GPT of configs/drin_transformer.yaml (vocab
// 1024, block 512, 24 layers × 16 heads × 1024) has 304,932,864 parameters
// and 167.7 GMACs over 511 tokens (docs/reference-notes.md, minGPT).
func TestMinGPTParams(t *testing.T) {
	k, _ := bench.LookupOpKind("mingpt")
	s, err := k.Parse([]byte(`{"vocab_size": 1024, "block_size": 512, "n_layer": 24, "n_head": 16, "n_embd": 1024, "tokens": 511}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Params() != 304932864 {
		t.Errorf("%d params, want 304,932,864", s.Params())
	}
	if g := float64(s.MACs()) / 1e9; math.Abs(g-167.7) > 1.7 {
		t.Errorf("%.2f GMACs, want 167.7 (±1%%)", g)
	}
	if err := s.Graph().Validate(s); err != nil {
		t.Error(err)
	}
	if _, err := k.Parse([]byte(`{"vocab_size": 1024, "block_size": 512, "n_layer": 1, "n_head": 16, "n_embd": 1024, "tokens": 513}`), 1); err == nil {
		t.Error("tokens > block_size accepted")
	}
}

// TestMinGPTSynthInput: timing inputs are code indices, integers in
// [0, vocab_size), deterministic in the seed.
func TestMinGPTSynthInput(t *testing.T) {
	k, _ := bench.LookupOpKind("mingpt")
	s, err := k.Parse([]byte(`{"vocab_size": 97, "block_size": 40, "n_layer": 1, "n_head": 2, "n_embd": 64, "tokens": 23}`), 2)
	if err != nil {
		t.Fatal(err)
	}
	in := s.(interface {
		SynthInput(string, uint64) []float32
	})
	ids := in.SynthInput("idx", 1)
	if len(ids) != 46 || in.SynthInput("other", 1) != nil {
		t.Fatalf("%d ids", len(ids))
	}
	seen := map[float32]bool{}
	for _, v := range ids {
		if v < 0 || v >= 97 || v != float32(int(v)) {
			t.Fatalf("id %g is not an integer in [0, 97)", v)
		}
		seen[v] = true
	}
	if len(seen) < 20 {
		t.Errorf("only %d distinct ids in 46", len(seen))
	}
}
