"""CLIP (docs/reference-notes.md, CLIP): the reference modules against their float64 NumPy
recomputation on small random shapes, the quirks a port gets wrong (QuickGELU, ln_pre, pooling at
the end-of-text token, the causal mask), the parameter counts of the released models, and a whole
CLIP state_dict, as a released checkpoint holds it, converted by convert_checkpoint.py for the
image tower, the text tower and the network unchanged."""

import os
import subprocess
import sys
import tempfile
import unittest

import _paths  # noqa: F401
import numpy as np
import torch

from vitbench_ref import cases as C
from vitbench_ref import clip
from vitbench_ref.stored import token_ids
from vitbench_ref.synth import default_role

torch.set_num_threads(2)

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "convert_checkpoint.py")
TINY = {"embed_dim": 24, "image_resolution": 36, "vision_layers": 2, "vision_width": 64, "vision_patch_size": 8,
        "vision_heads": 2, "context_length": 13, "vocab_size": 97, "transformer_width": 64, "transformer_heads": 2,
        "transformer_layers": 2, "texts": 5}


def randomize(module, seed):
    """Fill every state_dict entry with uniform noise of the exporter's (center, scale) for its name;
    returns {name: float32 ndarray}."""
    g = torch.Generator().manual_seed(seed)
    arrays = {}
    for name, t in module.state_dict().items():
        c, s = default_role(name, list(t.shape), False)
        if name == "logit_scale":
            c, s = 4.6, 0.0
        arrays[name] = (c + s * (2 * torch.rand(t.shape, generator=g) - 1)).numpy().astype(np.float32)
    module.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})
    return arrays


def case(op, params, batch):
    return C.check_case({"name": "clip/t", "op": op, "params": params, "batch": batch})


class TestCLIP(unittest.TestCase):
    def run_net(self, p, batch, seed=1):
        c = case("clip", p, batch)
        module = C.build_module("clip", c["params"]).eval()
        w = randomize(module, seed)
        ins, _, _ = C.shapes("clip", c["params"], batch)
        x = np.random.default_rng(seed).uniform(-1, 1, ins["image"]).astype(np.float32)
        text = token_ids(c["params"], batch, ins["text"])
        return c, module, w, x, text

    def test_matches_float64(self):
        c, module, w, x, text = self.run_net(TINY, 2)
        with torch.no_grad():
            got = module(torch.from_numpy(x), torch.from_numpy(text))["logits"].numpy()
        want = clip.independent_reference("clip", {"image": x, "text": text}, w, c["params"])["logits"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        self.assertEqual(list(got.shape), [2, TINY["texts"]])

    def test_quirks_change_the_output(self):
        """Each mistake moves the features far past float32 noise (about 1e-7 here): erf GELU, no
        ln_pre, the last position pooled, no causal mask."""
        c, module, w, x, text = self.run_net(TINY, 2)
        xt, tt = torch.from_numpy(x), torch.from_numpy(text)
        with torch.no_grad():
            img = module.visual(xt)
            txt = clip._encode_text(module, tt)
            mlp = module.visual.transformer.resblocks[0].mlp
            mlp.gelu = torch.nn.GELU()
            self.assertGreater((module.visual(xt) - img).abs().max().item(), 1e-5)
            mlp.gelu = clip.QuickGELU()
            ln_pre = module.visual.ln_pre
            module.visual.ln_pre = torch.nn.Identity()
            self.assertGreater((module.visual(xt) - img).abs().max().item(), 1e-5)
            module.visual.ln_pre = ln_pre
            ids = tt.long()
            h = module.transformer((module.token_embedding(ids) + module.positional_embedding).permute(1, 0, 2))
            at_last = module.ln_final(h.permute(1, 0, 2))[:, -1] @ module.text_projection
            self.assertGreater((at_last - txt)[1:].abs().max().item(), 1e-5)  # the first fills the context
            np.testing.assert_allclose(at_last[0].numpy(), txt[0].numpy(), rtol=0, atol=1e-6)
            for blk in module.transformer.resblocks:
                blk.causal = False
            self.assertGreater((clip._encode_text(module, tt) - txt).abs().max().item(), 1e-5)

    def test_tokens_after_eot_do_not_matter(self):
        c, module, w, x, text = self.run_net(TINY, 2)
        other = text.copy()
        for i in range(other.shape[0]):
            e = int(other[i].argmax())
            other[i, e + 1:] = 5
        with torch.no_grad():
            a = clip._encode_text(module, torch.from_numpy(text))
            b = clip._encode_text(module, torch.from_numpy(other))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-6)

    def test_token_ids(self):
        p = case("clip_text", {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 1, "layers": 1,
                               "embed_dim": 8}, 4)["params"]
        t = token_ids(p, 4, [4, 77])
        self.assertTrue((t[:, 0] == 49406).all())
        self.assertEqual(int(t[0].argmax()), 76)
        ends = [int(r.argmax()) for r in t]
        self.assertTrue(all(e < 76 for e in ends[1:]), ends)
        for r, e in zip(t, ends):
            self.assertEqual(r[e], 49407)
            self.assertTrue((r[e + 1:] == 0).all())
            self.assertTrue(((r[1:e] >= 1) & (r[1:e] < 49406)).all())

    def test_params_of_the_released_models(self):
        vit = lambda res, patch, width, layers, out: {"input_resolution": res, "patch_size": patch, "width": width,
                                                      "layers": layers, "heads": width // 64, "output_dim": out}
        for p, want in [(vit(224, 32, 768, 12, 512), 87849216), (vit(224, 16, 768, 12, 512), 86192640),
                        (vit(224, 14, 1024, 24, 768), 303966208), (vit(336, 14, 1024, 24, 768), 304293888)]:
            self.assertEqual(C.param_count("clip_visual", case("clip_visual", p, 1)["params"]), want)
        b32 = {"embed_dim": 512, "image_resolution": 224, "vision_layers": 12, "vision_width": 768,
               "vision_patch_size": 32, "context_length": 77, "vocab_size": 49408, "transformer_width": 512,
               "transformer_heads": 8, "transformer_layers": 12, "texts": 1}
        p = case("clip", b32, 1)["params"]
        self.assertEqual(p["vision_heads"], 12)
        self.assertEqual(C.param_count("clip", p), 151277313)
        module = C.build_module("clip", p)
        self.assertEqual(sum(t.numel() for t in module.parameters()), 151277313)
        self.assertEqual(sorted(module.state_dict()), sorted(C.shapes("clip", p, 1)[1]))

    def test_checkpoint_converts_unchanged(self):
        """A whole CLIP state_dict (what a released checkpoint holds) converts for the network and,
        with the other tower's arrays listed as ignored, for each tower."""
        c, module, w, _, _ = self.run_net(TINY, 1)
        with tempfile.TemporaryDirectory() as d:
            ckpt = os.path.join(d, "clip.pt")
            torch.save(module.state_dict(), ckpt)
            towers = {"clip": c["params"],
                      "clip_visual": {"input_resolution": 36, "patch_size": 8, "width": 64, "layers": 2, "heads": 2,
                                      "output_dim": 24},
                      "clip_text": {"context_length": 13, "vocab_size": 97, "width": 64, "heads": 2, "layers": 2,
                                    "embed_dim": 24}}
            for op, p in towers.items():
                cj, out = os.path.join(d, op + ".json"), os.path.join(d, op + ".npz")
                with open(cj, "w") as f:
                    f.write('{"name": "t/%s", "op": "%s", "batch": 1, "params": %s}' % (op, op, str(p).replace("'", '"')))
                r = subprocess.run([sys.executable, SCRIPT, "--case-json", cj, ckpt, out], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                want = C.shapes(op, C.normalize_params(op, p), 1)[1]
                with np.load(out) as z:
                    self.assertEqual(sorted(z.files), sorted(want))
                    for k in z.files:
                        np.testing.assert_array_equal(z[k], w[k])


if __name__ == "__main__":
    unittest.main()
